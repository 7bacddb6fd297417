"""A fast, dependency-light sanity check of a .gguf file before transformers reads it.

Owns parsing just enough of the GGUF header (magic, version, metadata, tensor table) to
answer: is this a GGUF file, which architecture does it hold, and does every tensor's data
lie inside the file? A truncated download or a renamed random file becomes a
`CorruptModelError` naming the problem instead of a numpy reshape error 30 s into loading.
(`gguf.GGUFReader` answers the same but takes ~10 s on the bundled file: it materialises
every metadata array.) Does not own dequantizing or conversion; see `engine.loader`.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class GgufSummary:
    version: int
    architecture: str
    tensor_count: int
    data_end: int  # byte offset where the last tensor's data ends


class _Cursor:
    """Little-endian reads over a memory map, raising CorruptModelError past the end."""

    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def read(self, fmt: str) -> int | float | bool:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.buf):
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = int(self.read("Q"))
        if self.pos + n > len(self.buf):
            raise CorruptModelError(f"{self.path} is truncated: its GGUF header ends early")
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def value(self, vtype: int) -> object:
        if vtype in _SCALARS:
            return self.read(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, count = int(self.read("I")), int(self.read("Q"))
            if item_type in _SCALARS:  # skip numeric arrays without unpacking them
                self.pos += count * struct.calcsize("<" + _SCALARS[item_type])
                return None
            for _ in range(count):
                self.value(item_type)
            return None
        raise CorruptModelError(
            f"{self.path} is not a valid GGUF file (unknown value type {vtype})"
        )


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
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    cur.pos = 4
    version, n_tensors, n_kv = int(cur.read("I")), int(cur.read("Q")), int(cur.read("Q"))
    if version not in (2, 3) or n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise CorruptModelError(f"{path} has an unreadable GGUF header (version {version})")
    meta: dict[str, object] = {}
    for _ in range(n_kv):
        key = cur.string()
        meta[key] = cur.value(int(cur.read("I")))
    data_end_rel = 0
    for _ in range(n_tensors):
        cur.string()  # tensor name
        dims = [int(cur.read("Q")) for _ in range(int(cur.read("I")))]
        ttype, offset = int(cur.read("I")), int(cur.read("Q"))
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
        except (ValueError, KeyError):
            raise CorruptModelError(f"{path} uses an unknown GGUF tensor type {ttype}") from None
        count = 1
        for d in dims:
            count *= d
        data_end_rel = max(data_end_rel, offset + count // block * type_size)
    alignment = int(meta.get("general.alignment", 32) or 32)  # type: ignore[call-overload]
    data_start = (cur.pos + alignment - 1) // alignment * alignment
    if data_start + data_end_rel > size:
        raise CorruptModelError(
            f"{path} is truncated: its tensors need {data_start + data_end_rel} bytes "
            f"but the file has {size}"
        )
    arch = meta.get("general.architecture")
    return GgufSummary(version, str(arch or "unknown"), n_tensors, data_start + data_end_rel)
