"""Token-embedding rows read from a GGUF file on demand: the fast path's input lookup.

Owns `TokenRows`: where a GGUF's embedding table lies (an `EmbeddingSource`), and ``lookup``,
which reads just the rows of the ids asked for with positioned reads and dequantises them.
The table is never copied, and never mapped: a mapped row faults in the 64 KB around it, and
those pages stay resident, so a mapping grew the RSS ~8 MB per 128 distinct tokens of a
151k-vocabulary Q8_0 table (8.5 MB after one 128-token prompt in `bench open`) and, over a
long chat, towards the whole table (144 MB for Qwen2.5-0.5B), beside the head's packed copy
of the same weights. A read costs ~2 µs a row. Does not own the graph or the runner
(`engine.runners.onnx_runner`), nor dequantising (`engine.gguf.repack.dequantize_rows`).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.gguf.repack import dequantize_rows


class TokenRows:
    """The embedding rows of ``source`` (an `EmbeddingSource`) in the GGUF file ``path``."""

    def __init__(self, path: Path, source: Any) -> None:
        import gguf

        self.source = source
        self.qtype = gguf.GGMLQuantizationType(source.ggml_type)
        block, type_size = gguf.GGML_QUANT_SIZES[self.qtype]
        self.row_bytes = source.cols // block * type_size
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._closer = weakref.finalize(self, os.close, self._fd)

    def lookup(self, ids: Sequence[int]) -> np.ndarray:
        """float32 (len(ids), hidden), scaled as the architecture wants."""

        s = self.source
        wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
        if wanted.size and (wanted.min() < 0 or wanted.max() >= s.rows):
            raise IndexError(f"token id out of range 0..{s.rows - 1}: {wanted.tolist()}")
        unique, where = np.unique(wanted, return_inverse=True)  # a prompt repeats tokens
        raw = np.empty((len(unique), self.row_bytes), dtype=np.uint8)
        for row, token in zip(raw, unique.tolist(), strict=True):
            self._read(row, s.offset + token * self.row_bytes)
        values = dequantize_rows(self.qtype, raw, len(unique), s.cols, np.arange(len(unique)))
        values = values[where]  # (len(ids), hidden), in the order asked
        if s.scale != 1.0:
            values *= np.float32(s.scale)
        return values

    def _read(self, out: np.ndarray, offset: int) -> None:
        if hasattr(os, "preadv"):
            got = os.preadv(self._fd, [out.data], offset)
        else:  # Windows: no positioned read in os; one thread owns the runner
            os.lseek(self._fd, offset, os.SEEK_SET)
            got = _read_into(self._fd, out)
        if got != out.nbytes:
            raise OSError(f"short read of an embedding row at byte {offset} of the model file")

    def close(self) -> None:
        """Close the file now (otherwise when the table is collected)."""
        self._closer()


def _read_into(fd: int, out: np.ndarray) -> int:
    data = os.read(fd, out.nbytes)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return len(data)
