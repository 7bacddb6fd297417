"""A fast, dependency-light sanity check of a .gguf file before transformers reads it.

Owns parsing just enough of the GGUF header (magic, version, metadata, tensor table) to
answer: is this a GGUF file, which architecture does it hold, does every tensor's data lie
inside the file, what does each tensor weigh (the tensor table: name, shape, ggml type, bytes),
and a few scalar metadata values (the model's name, file type, context length, layer and head
counts) — enough to name the model and estimate its memory without reading any weights.
A truncated download or a renamed random file becomes a `CorruptModelError` naming the problem
instead of a numpy reshape error 30 s into loading. (`gguf.GGUFReader` answers the same but
materialises every metadata array; this skips arrays — the vocabulary — without decoding them.)
Does not own reading every value (`engine.gguf.metadata`, the engine's full one-pass reader),
the tokenizer or config built from them (`engine.gguf.header_cache`), dequantizing, or
repacking (`engine.gguf.repack`).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from engine.errors import CorruptModelError

GGUF_MAGIC = b"GGUF"
# GGUF metadata value types -> struct format of a scalar (8 = string, 9 = array).
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")
_MAX_DIMS = 4  # GGML_MAX_DIMS
_MAX_NESTING = 2  # arrays of arrays: llama.cpp writes none; 5,000 deep was a RecursionError
# Plausible limits, far above any real model (the largest have ~2,000 tensors, ~60 keys and
# 262k-token vocabularies) and far below what a hostile header can claim in a small file.
MAX_TENSORS = 65_536
MAX_KEYS = 65_536


@dataclass(frozen=True, slots=True)
class GgufTensor:
    """One entry of the tensor table (no data)."""

    name: str
    shape: tuple[int, ...]  # torch order: (rows, row length); GGUF stores the reverse
    ggml_type: int  # a `gguf.GGMLQuantizationType` value
    nbytes: int  # bytes of its data in the file

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class GgufSummary:
    version: int
    architecture: str
    tensor_count: int
    data_end: int  # byte offset where the last tensor's data ends
    tensors: tuple[GgufTensor, ...] = ()
    # Scalar metadata: every number, plus the "general.*" strings (name, basename, ...).
    # Arrays (vocabulary, merges, per-layer values) and other strings are skipped.
    metadata: dict[str, int | float | bool | str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``general.name``, or "" when the file does not declare one."""
        return str(self.metadata.get("general.name", "")).strip()

    @property
    def file_type(self) -> int | None:
        """``general.file_type`` (llama.cpp's LLAMA_FTYPE number), None when absent."""
        value = self.metadata.get("general.file_type")
        return int(value) if isinstance(value, int) else None

    def arch_int(self, key: str) -> int | None:
        """An integer hyper-parameter under the architecture prefix, e.g. ``block_count``.
        Raises CorruptModelError naming the key when it is NaN, infinite or negative."""
        full = f"{self.architecture}.{key}"
        value = self.metadata.get(full)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        if not math.isfinite(value) or value < 0 or value != int(value):
            raise CorruptModelError(f"its {full} is {value!r}, not a count")
        return int(value)


class _Cursor:
    """Little-endian reads over a memory map, raising CorruptModelError past the end."""

    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def read(self, fmt: str) -> int | float | bool:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.buf):
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        value: int | float | bool
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        start = self.skip_string()
        return self.buf[start : self.pos].decode("utf-8", errors="replace")

    def skip_string(self) -> int:
        """Step over a string; return where its bytes start."""
        n = int(self.read("Q"))
        if self.pos + n > len(self.buf):
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        self.pos += n
        return self.pos - n

    def skip_strings(self, count: int) -> None:
        """Step over ``count`` strings (the vocabulary: ~50k-250k, never decoded here) in one
        tight loop: ~0.05 s for Qwen's 151k tokens and 151k merges."""
        buf, pos, size, unpack = self.buf, self.pos, len(self.buf), _U64.unpack_from
        if count * 8 > size - pos:
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        for _ in range(count):
            if pos + 8 > size:
                raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
            pos += 8 + unpack(buf, pos)[0]
        if pos > size:
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        self.pos = pos

    def value(self, vtype: int, depth: int = 0) -> object:
        if vtype in _SCALARS:
            return self.read(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth >= _MAX_NESTING:
                raise CorruptModelError(
                    f"{self.path} is not a valid GGUF file (arrays nested over {_MAX_NESTING} deep)"
                )
            item_type, count = int(self.read("I")), int(self.read("Q"))
            if item_type in _SCALARS:  # skip numeric arrays without unpacking them
                self.pos += count * struct.calcsize("<" + _SCALARS[item_type])
                return None
            if item_type == _STRING:
                self.skip_strings(count)
                return None
            for _ in range(count):  # arrays of arrays: not written by llama.cpp
                self.value(item_type, depth + 1)
            return None
        raise CorruptModelError(
            f"{self.path} is not a valid GGUF file (unknown value type {vtype})"
        )


def summary_of(path: Path) -> GgufSummary:
    """`read_gguf_summary`, parsed once per file version: opening a model asks several
    questions of one header (which tensors the kernel ops map, what they cost, the cache
    folder's name), ~30 ms a parse on a 151k-token vocabulary. Keyed by size and mtime, so a
    changed file is parsed again."""
    st = path.stat()
    return _summary_at(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _summary_at(path: str, size: int, mtime_ns: int) -> GgufSummary:
    return read_gguf_summary(Path(path))


def read_gguf_summary(path: Path) -> GgufSummary:
    """Parse the header of ``path``; raise CorruptModelError when it is not a complete GGUF."""
    with path.open("rb") as f:
        if path.stat().st_size < 24:
            raise CorruptModelError(
                f"{path} is not a GGUF file: it is only {path.stat().st_size} bytes"
            )
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            if buf[:4] != GGUF_MAGIC:
                raise CorruptModelError(
                    f"{path} is not a GGUF file (it does not start with 'GGUF')"
                )
            return _parse(_Cursor(buf, path), path, len(buf))


def _parse(cur: _Cursor, path: Path, size: int) -> GgufSummary:
    cur.pos = 4
    version, n_tensors, n_kv = int(cur.read("I")), int(cur.read("Q")), int(cur.read("Q"))
    if version not in (2, 3):
        raise CorruptModelError(f"{path} has an unreadable GGUF header (version {version})")
    if n_tensors > MAX_TENSORS or n_kv > MAX_KEYS or (n_tensors * 24 + n_kv * 12) > size:
        raise CorruptModelError(
            f"{path} has an implausible GGUF header ({n_tensors} tensors, {n_kv} keys "
            f"in {size} bytes)"
        )
    meta = _read_metadata(cur, n_kv)
    tensors, data_end_rel = _read_tensor_table(cur, path, n_tensors)
    alignment = _alignment(meta, path)
    data_start = (cur.pos + alignment - 1) // alignment * alignment
    if data_start + data_end_rel > size:
        raise CorruptModelError(
            f"{path} is truncated: its tensors need {data_start + data_end_rel} bytes "
            f"but the file has {size}"
        )
    arch = str(meta.get("general.architecture") or "unknown")
    return GgufSummary(version, arch, n_tensors, data_start + data_end_rel, tensors, meta)


def _alignment(meta: dict[str, int | float | bool | str], path: Path) -> int:
    """``general.alignment`` (32 when absent): a power of two, or the file is refused."""
    value = meta.get("general.alignment", 32)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value & (value - 1):
        raise CorruptModelError(
            f"{path} has a corrupt GGUF header: general.alignment is {value!r}, not a power of two"
        )
    return value


def _read_metadata(cur: _Cursor, n_kv: int) -> dict[str, int | float | bool | str]:
    """The scalar metadata values worth keeping (see `GgufSummary.metadata`)."""
    meta: dict[str, int | float | bool | str] = {}
    for _ in range(n_kv):
        key = cur.string()
        value = cur.value(int(cur.read("I")))
        if isinstance(value, int | float) or (
            isinstance(value, str) and key.startswith("general.")
        ):
            meta[key] = value
    return meta


def _read_tensor_table(
    cur: _Cursor, path: Path, n_tensors: int
) -> tuple[tuple[GgufTensor, ...], int]:
    """(the tensor table, where the last tensor's data ends relative to the data start)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    tensors: list[GgufTensor] = []
    data_end_rel = 0
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = int(cur.read("I"))
        if not 1 <= n_dims <= _MAX_DIMS:
            raise CorruptModelError(f"{path}: tensor {name!r} has {n_dims} dimensions")
        dims = [int(cur.read("Q")) for _ in range(n_dims)]
        ttype, offset = int(cur.read("I")), int(cur.read("Q"))
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
        except (ValueError, KeyError):
            raise CorruptModelError(f"{path} uses an unknown GGUF tensor type {ttype}") from None
        if 0 in dims or dims[0] % block:
            raise CorruptModelError(f"{path}: tensor {name!r} has an impossible shape {dims}")
        nbytes = math.prod(dims) // block * type_size
        tensors.append(GgufTensor(name, tuple(reversed(dims)), ttype, nbytes))
        data_end_rel = max(data_end_rel, offset + nbytes)
    return tuple(tensors), data_end_rel
