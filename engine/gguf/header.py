"""A summary of a .gguf file's header: the model list's and the memory estimate's view of it.

Owns `GgufSummary`, read through the engine's one GGUF parser (`engine.gguf.reader`, every array
stepped over, not decoded), to answer: is this a GGUF file, which architecture does it hold,
does every tensor's data lie inside the file, what does each tensor weigh (the tensor table:
name, shape, ggml type, bytes), and a few scalar metadata values (the model's name, file type,
context length, layer and head counts) — enough to name the model and estimate its memory
without reading any weights. A truncated download or a renamed random file becomes a
`CorruptModelError` naming the problem instead of a numpy reshape error 30 s into loading. Does
not own parsing (`engine.gguf.reader`), the tokenizer or config built from them
(`engine.header_cache`), dequantizing, or repacking (`engine.gguf.repack`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from engine.errors import CorruptModelError
from engine.gguf.reader import GgufFile, open_gguf


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
    gf = open_gguf(path, arrays=False)
    try:
        return summarize(gf)
    finally:
        gf.close()  # its tensor entries refer back to it: free it now, not at the next GC


def summarize(gf: GgufFile) -> GgufSummary:
    """The summary of a parsed file (`engine.gguf.reader`; arrays may have been skipped)."""
    tensors = tuple(
        GgufTensor(
            t.name,
            tuple(int(d) for d in reversed(t.shape.tolist())),
            int(t.tensor_type),
            t.n_bytes,
        )
        for t in gf.tensors
    )
    data_end = max((t.data_offset + t.n_bytes for t in gf.tensors), default=gf.data_offset)
    meta: dict[str, int | float | bool | str] = {}
    for key, f in gf.fields.items():
        value = f.value
        if isinstance(value, int | float) or (
            isinstance(value, str) and key.startswith("general.")
        ):
            meta[key] = value
    return GgufSummary(gf.version, gf.architecture, len(tensors), data_end, tensors, meta)
