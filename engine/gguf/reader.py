"""One fast pass over a GGUF file's metadata and tensor table: the engine's ONE GGUF parser.

Owns `open_gguf`: every key/value (the vocabulary and merges included) and the tensor table,
read once from a memory map; tensor data stays in the file, mapped on first use. What a reader
does not need is stepped over, not decoded: ``string_arrays=False`` skips the vocabulary and
merges (their length is kept), ``arrays=False`` numeric arrays too (the model list's summary,
`engine.gguf.header`, reads a 151k-token header so in ~0.05 s). `HeaderParser` is the parser
itself, over any buffer: the hub reads a remote header's prefix with it (`ends_early` asks for
more bytes instead of calling the file truncated).

String arrays are read in bulk: one tight loop finds where each length-prefixed string starts,
then one decode per string; numeric arrays become numpy arrays without a per-item call.
(gguf-py's `GGUFReader` builds a numpy view per field *part*: 1.8 million of them for a Qwen
vocabulary, ~13 s on this machine, and transformers' GGUF loaders ran it four times per first
open.)

`GgufFile` is duck-type compatible with the parts of `gguf.GGUFReader` the engine uses:
``fields[key].contents()``, ``tensors`` (``name``, ``shape`` in GGUF order, ``tensor_type``,
``n_elements``, ``n_bytes``, ``data_offset``, ``data`` as a read-only memmap view shaped as
gguf-py shapes it) and ``data_offset``. Plain values are in ``metadata``.

Every count and length is checked against the bytes left in the file before it is used, so a
hostile or truncated header raises `CorruptModelError` at once instead of allocating or looping
for minutes. Does not own the summary records (`engine.gguf.header`),
building the tokenizer or config from the values (`engine.gguf.tokenizer`,
`engine.arch.hf_config`), nor dequantising (`engine.gguf.repack`).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import CorruptModelError

GGUF_MAGIC = b"GGUF"
STRING, ARRAY = 8, 9
# GGUF value type -> numpy little-endian dtype of one scalar.
_NUMPY = {
    0: "<u1",
    1: "<i1",
    2: "<u2",
    3: "<i2",
    4: "<u4",
    5: "<i4",
    6: "<f4",
    7: "?",
    10: "<u8",
    11: "<i8",
    12: "<f8",
}
_WIDTH = {t: np.dtype(d).itemsize for t, d in _NUMPY.items()}
_MAX_DIMS = 4  # GGML_MAX_DIMS
# Plausible limits, far above any real model (~2,000 tensors, ~60 keys, vocabularies and merge
# lists of at most 262k) and far below what a hostile header claims to cost gigabytes at load
# (10^6 tensors in 32 MB reached 4.6 GB; a 10^6-token vocabulary 2.6 GB).
MAX_TENSORS = 65_536
MAX_KEYS = 65_536
MAX_STRINGS = 524_288  # one string array (the vocabulary, the merges)
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
# How many full parses this process has made (tests assert a first open makes one).
parse_count = 0


@dataclass(frozen=True, slots=True)
class SkippedStrings:
    """A string array read with ``string_arrays=False``: only its length is known."""

    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True)
class SkippedArray:
    """A numeric array read with ``arrays=False``: only its item type and length are known."""

    item_type: int
    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True)
class GgufField:
    """One key/value, shaped like gguf-py's ReaderField where the engine touches it."""

    name: str
    types: tuple[int, ...]  # (type,) or (ARRAY, item type): `gguf.GGUFValueType` values
    value: Any  # int/float/bool/str, list[str], or a numpy array of numbers

    def contents(self) -> Any:
        """The value as gguf-py's ``ReaderField.contents()`` gives it (arrays as lists)."""
        if isinstance(self.value, np.ndarray):
            return self.value.tolist()
        return self.value


@dataclass(frozen=True, slots=True)
class GgufTensorInfo:
    """One tensor table entry; ``data`` maps its bytes on first use."""

    name: str
    tensor_type: Any  # gguf.GGMLQuantizationType
    shape: np.ndarray  # GGUF order (row length first), uint64, as gguf-py
    n_elements: int
    n_bytes: int
    data_offset: int  # absolute, in the file
    _file: GgufFile = field(repr=False, compare=False)

    @property
    def data(self) -> np.ndarray:
        """A read-only view of the tensor's bytes, typed and shaped as gguf-py's ``.data``."""
        return self._file.tensor_data(self)


class GgufFile:
    """A parsed GGUF: ``metadata``, ``fields``, ``tensors``; tensor data through one memmap."""

    def __init__(self, path: Path | str, version: int, fields: dict[str, GgufField]) -> None:
        self.path = path
        self.version = version
        self.fields = fields
        self.tensors: list[GgufTensorInfo] = []
        self.data_offset = 0
        self.alignment = 32

    @property
    def metadata(self) -> dict[str, Any]:
        return {k: f.value for k, f in self.fields.items()}

    def close(self) -> None:
        """Drop the fields and the tensor table. Each tensor entry refers back to this file
        (for `GgufTensorInfo.data`), so a parsed file is a reference cycle that only the
        cyclic GC frees, when it next runs: a 151k-token vocabulary's strings (~45 MB) stayed
        through a first open's session build, its peak (0.5B Qwen vocabulary: 855-899 MB)."""
        self.tensors = []
        self.fields = {}
        for cached in ("_by_name", "_memmap"):
            self.__dict__.pop(cached, None)

    def get(self, key: str, default: Any = None) -> Any:
        found = self.fields.get(key)
        return default if found is None else found.value

    @property
    def architecture(self) -> str:
        return str(self.get("general.architecture") or "unknown")

    def tensor(self, name: str) -> GgufTensorInfo | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, GgufTensorInfo]:
        return {t.name: t for t in self.tensors}

    @cached_property
    def _memmap(self) -> np.memmap:
        return np.memmap(self.path, mode="r")

    def tensor_data(self, t: GgufTensorInfo) -> np.ndarray:
        from gguf import GGMLQuantizationType as Q
        from gguf.quants import quant_shape_to_byte_shape

        dims = tuple(int(d) for d in reversed(t.shape.tolist()))
        plain = {
            Q.F32: np.float32,
            Q.F16: np.float16,
            Q.F64: np.float64,
            Q.I8: np.int8,
            Q.I16: np.int16,
            Q.I32: np.int32,
            Q.I64: np.int64,
        }.get(t.tensor_type)
        raw = self._memmap[t.data_offset : t.data_offset + t.n_bytes]
        if plain is not None:
            return raw.view(plain).reshape(dims)
        return raw.reshape(quant_shape_to_byte_shape(dims, t.tensor_type))


def open_gguf(path: Path | str, *, string_arrays: bool = True, arrays: bool = True) -> GgufFile:
    """Parse ``path``'s metadata and tensor table; CorruptModelError if it is not a sound GGUF.

    ``string_arrays=False``: the vocabulary and merges are checked and stepped over, not
    decoded (their value is a `SkippedStrings`), for readers that need only the model's shape
    (the fast path's graph build): ~0.05 s instead of ~0.4 s for Qwen's vocabulary.
    ``arrays=False`` (implies no string arrays): numeric arrays are stepped over as well
    (a `SkippedArray`), for readers that need only scalars and the tensor table."""
    global parse_count
    path = Path(path)
    size = path.stat().st_size
    if size < 24:
        raise CorruptModelError(f"{path} is not a GGUF file: it is only {size} bytes")
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != GGUF_MAGIC:
            raise CorruptModelError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
        if string_arrays and arrays:
            parse_count += 1
        return HeaderParser(buf, path, string_arrays=string_arrays, arrays=arrays).parse()


class HeaderParser:
    """Sequential little-endian reads with every length checked against the file size.

    ``buf`` is the file's bytes from its start (a memory map, or bytes: a prefix of a remote
    file, whose full size is ``file_size``); ``where`` names it in messages. Running off the
    end of ``buf`` calls `ends_early`, which a reader of a prefix overrides to fetch more."""

    def __init__(
        self,
        buf: Any,
        where: Path | str,
        *,
        file_size: int | None = None,
        string_arrays: bool = True,
        arrays: bool = True,
    ) -> None:
        self.buf, self.path, self.pos, self.held = buf, where, 4, len(buf)
        self.size = len(buf) if file_size is None else file_size
        self.string_arrays = string_arrays and arrays
        self.arrays = arrays

    def corrupt(self, why: str) -> CorruptModelError:
        return CorruptModelError(f"{self.path} has a corrupt GGUF header: {why}")

    def ends_early(self) -> Exception:
        """What running off the end of the bytes held raises (a prefix reader: "fetch more")."""
        return CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.held:
            raise self.ends_early()

    def u32(self) -> int:
        self.need(4)
        (v,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(v)

    def u64(self) -> int:
        self.need(8)
        (v,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(v)

    def string(self) -> str:
        n = self.u64()
        self.need(n)
        self.pos += n
        return bytes(self.buf[self.pos - n : self.pos]).decode("utf-8", errors="replace")

    def count(self, n: int, min_item: int, what: str) -> int:
        """``n`` items of at least ``min_item`` bytes must fit in what is left of the file."""
        if n * min_item > self.size - self.pos:
            raise CorruptModelError(  # a cut download, or a hostile count
                f"{self.path} is truncated or its GGUF header is corrupt: {what} claims {n} "
                "items, more than the file can hold"
            )
        return n

    def parse(self) -> GgufFile:
        version = self.u32()
        if version not in (2, 3):
            raise CorruptModelError(
                f"{self.path} has an unreadable GGUF header (version {version})"
            )
        n_tensors, n_kv = self.u64(), self.u64()
        if n_tensors > MAX_TENSORS or n_kv > MAX_KEYS:
            raise self.corrupt(
                f"it claims an implausible {n_tensors} tensors and {n_kv} keys (at most "
                f"{MAX_TENSORS} and {MAX_KEYS} are plausible)"
            )
        self.count(n_kv, 8 + 4, "the key/value count")
        self.count(n_tensors, 8 + 4 + 4 + 8, "the tensor count")  # before the metadata too
        fields: dict[str, GgufField] = {}
        for _ in range(n_kv):
            key = self.string()
            vtype = self.u32()
            types, value = self.value(vtype, key)
            if key in fields:
                raise self.corrupt(f"the key {key!r} appears twice")
            fields[key] = GgufField(key, types, value)
        out = GgufFile(self.path, version, fields)
        self.count(n_tensors, 8 + 4 + 4 + 8, "the tensor count")
        entries = [self.tensor_entry() for _ in range(n_tensors)]
        out.alignment = self.alignment(fields)
        out.data_offset = (self.pos + out.alignment - 1) // out.alignment * out.alignment
        out.tensors = self.tensors(out, entries)
        return out

    def value(self, vtype: int, key: str) -> tuple[tuple[int, ...], Any]:
        if vtype in _NUMPY:
            self.need(_WIDTH[vtype])
            v = np.frombuffer(self.buf, _NUMPY[vtype], 1, self.pos)[0].item()
            self.pos += _WIDTH[vtype]
            return (vtype,), v
        if vtype == STRING:
            return (STRING,), self.string()
        if vtype != ARRAY:
            raise self.corrupt(f"{key!r} has an unknown value type {vtype}")
        item, n = self.u32(), self.u64()
        if item in _NUMPY:
            self.count(n, _WIDTH[item], key)
            if not self.arrays:
                self.need(n * _WIDTH[item])
                self.pos += n * _WIDTH[item]
                return (ARRAY, item), SkippedArray(item, n)
            self.need(n * _WIDTH[item])
            arr = np.frombuffer(self.buf, _NUMPY[item], n, self.pos).copy()
            self.pos += n * _WIDTH[item]
            return (ARRAY, item), arr
        if item == STRING:
            if n > MAX_STRINGS:
                raise self.corrupt(f"{key!r} holds {n} strings (at most {MAX_STRINGS} plausible)")
            if not self.string_arrays:
                return (ARRAY, STRING), self.skip_strings(self.count(n, 8, key))
            return (ARRAY, STRING), self.strings(self.count(n, 8, key))
        raise self.corrupt(f"{key!r} is an array of unsupported type {item}")

    def strings(self, n: int) -> list[str]:
        """``n`` length-prefixed strings: find them all first, then decode each once."""
        buf, unpack, pos, size = self.buf, _U64.unpack_from, self.pos, self.held
        starts = [0] * n
        ends = [0] * n
        for i in range(n):
            if pos + 8 > size:
                raise self.ends_early()
            start = pos + 8
            pos = start + unpack(buf, pos)[0]
            starts[i], ends[i] = start, pos
        if pos > size:
            raise self.ends_early()
        base = self.pos
        blob = buf[base:pos]  # one copy of the whole array, then slices of it
        self.pos = pos
        try:
            return [
                blob[a - base : b - base].decode("utf-8") for a, b in zip(starts, ends, strict=True)
            ]
        except UnicodeDecodeError:  # rare: decode the broken ones leniently, like gguf-py fails
            return [
                blob[a - base : b - base].decode("utf-8", errors="replace")
                for a, b in zip(starts, ends, strict=True)
            ]

    def skip_strings(self, n: int) -> SkippedStrings:
        """Step over ``n`` strings in one tight loop: ~0.05 s for Qwen's 151k tokens."""
        buf, unpack, pos, size = self.buf, _U64.unpack_from, self.pos, self.held
        for _ in range(n):
            if pos + 8 > size:
                raise self.ends_early()
            pos += 8 + unpack(buf, pos)[0]
        if pos > size:
            raise self.ends_early()
        self.pos = pos
        return SkippedStrings(n)

    def tensor_entry(self) -> tuple[str, list[int], int, int]:
        name = self.string()
        n_dims = self.u32()
        if not 1 <= n_dims <= _MAX_DIMS:
            raise self.corrupt(f"tensor {name!r} has {n_dims} dimensions")
        dims = [self.u64() for _ in range(n_dims)]
        if 0 in dims:
            raise self.corrupt(f"tensor {name!r} has a zero dimension {dims}")
        return name, dims, self.u32(), self.u64()

    def alignment(self, fields: dict[str, GgufField]) -> int:
        found = fields.get("general.alignment")
        value = 32 if found is None else found.value
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self.corrupt(f"general.alignment is {value!r}")
        if value & (value - 1):
            raise self.corrupt(f"general.alignment {value} is not a power of two")
        return value

    def tensors(
        self, out: GgufFile, entries: list[tuple[str, list[int], int, int]]
    ) -> list[GgufTensorInfo]:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

        tensors: list[GgufTensorInfo] = []
        seen: set[str] = set()
        for name, dims, raw_type, offset in entries:
            try:
                qtype = GGMLQuantizationType(raw_type)
                block, type_size = GGML_QUANT_SIZES[qtype]
            except (ValueError, KeyError):
                raise CorruptModelError(
                    f"{self.path} uses an unknown GGUF tensor type {raw_type}"
                ) from None
            if name in seen:
                raise self.corrupt(f"the tensor {name!r} appears twice")
            seen.add(name)
            n_elements = math.prod(dims)
            if dims and dims[0] % block:
                raise self.corrupt(f"tensor {name!r} rows are not whole {qtype.name} blocks")
            n_bytes = n_elements // block * type_size
            start = out.data_offset + offset
            if start + n_bytes > self.size:
                raise CorruptModelError(
                    f"{self.path} is truncated: its tensors need {start + n_bytes} bytes "
                    f"but the file has {self.size}"
                )
            shape = np.array(dims, dtype=np.uint64)
            tensors.append(GgufTensorInfo(name, qtype, shape, n_elements, n_bytes, start, out))
        return tensors
