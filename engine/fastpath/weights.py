"""Streaming the fast path's initializers into one external-data file beside the graph.

Owns `WeightFile`: each array is appended to ``weights.bin`` at a page-aligned offset (so ONNX
Runtime can map it instead of copying) and becomes a `TensorProto` that points there. The
graph itself stays a small protobuf, whatever the model's size (protobuf caps a message at
2 GB), and the conversion holds at most one tensor's arrays in memory (plus what a
`engine.fastpath.pipeline.RepackPipeline` repacks ahead, when the conversion runs one: the
graph builder takes its weights from ``pipeline``). Large arrays are written in slices of
`WRITE_BYTES`, calling ``tick`` between them, so progress moves while a big tensor is written.

Also owns `release_mapped_pages`: ONNX Runtime maps ``weights.bin`` and prepacks every
`MatMulNBits` weight into its own buffers, but keeps the mapped scales (and, until the session
is open, the codes it read) resident: about 4 bytes per 32 weights after the open, and the
largest tensors' codes on top of the packed copy at the open's peak. Those pages are clean
copies of the file, so the kernel is asked to reclaim them (re-read if ever used again).
The same holds for the GGUF pages a conversion has read.
Does not own what the arrays are (`engine.gguf.repack`) or how the graph uses them
(`engine.fastpath.graph`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine import settings

if TYPE_CHECKING:
    from engine.fastpath.pipeline import RepackPipeline

ALIGN = 4096  # ORT maps external data whose offset is a multiple of the page size
WRITE_BYTES = 32 << 20  # a tick between slices this large keeps progress moving


class WeightFile:
    """Appends arrays to ``path``; `tensor` returns the TensorProto that refers to each."""

    def __init__(
        self,
        path: Path,
        pipeline: RepackPipeline | None = None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.pipeline = pipeline  # where the graph builder gets repacked weights, if anywhere
        self._tick = tick or (lambda: None)
        self._file = path.open("wb")
        self.offset = 0

    def tensor(self, name: str, array: np.ndarray) -> Any:
        """Write ``array`` (C order) and return an external-data TensorProto named ``name``."""
        from onnx import TensorProto, helper

        data = np.ascontiguousarray(array)
        pad = -self.offset % ALIGN
        if pad:
            self._file.write(b"\0" * pad)
            self.offset += pad
        flat = data.reshape(-1).view(np.uint8)
        for start in range(0, flat.size, WRITE_BYTES):  # raw C-order bytes, no copy
            flat[start : start + WRITE_BYTES].tofile(self._file)
            self._tick()
        proto = TensorProto()
        proto.name = name
        proto.data_type = helper.np_dtype_to_tensor_dtype(data.dtype)
        proto.dims.extend(data.shape)
        proto.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.path.name), ("offset", self.offset)):
            entry = proto.external_data.add()
            entry.key, entry.value = key, str(value)
        entry = proto.external_data.add()
        entry.key, entry.value = "length", str(data.nbytes)
        self.offset += data.nbytes
        return proto

    def close(self) -> None:
        # On disk before the graph is marked finished (a crash never leaves a short file
        # that looks converted), and clean: the kernel reclaims only clean pages at once
        # (`release_mapped_pages`), and the first session opens right after.
        self._file.flush()
        with contextlib.suppress(OSError):
            os.fsync(self._file.fileno())
        self._file.close()


# Linux 5.4+: reclaim the range's pages now. Never loses data (a clean file page is read
# again on next use; an anonymous page without swap simply stays), so it is safe on a range
# that ONNX Runtime unmaps and the allocator reuses between our reading of the maps and the
# call, which MADV_DONTNEED (that zeroes anonymous pages) is not: that race corrupted the heap.
MADV_PAGEOUT = 21


def release_mapped_pages(path: Path) -> int:
    """Ask the kernel to reclaim this process's resident pages of ``path``'s file mappings;
    returns the bytes of mappings advised (not all of them were resident).

    Only clean copies of the file are reclaimed, read again if used again (from disk, as the
    kernel may drop them from the page cache too; the weights a session reads at run time
    are prepacked copies, so that is rare). Linux only (elsewhere 0); HEARTH_RELEASE_PAGES=0
    turns it off.
    """
    if not sys.platform.startswith("linux") or settings.RELEASE_PAGES.is_off():
        return 0
    try:
        spans = _mapped_spans(str(path.resolve()))
    except OSError:
        return 0
    madvise = _libc_madvise()
    advised = 0
    for start, length in spans:
        if madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), MADV_PAGEOUT) == 0:
            advised += length
    return advised


def _mapped_spans(target: str) -> list[tuple[int, int]]:
    """(start, length) of ``target``'s mappings, from ``/proc/self/maps``."""
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    spans: list[tuple[int, int]] = []
    for line in lines:
        fields = line.split(maxsplit=5)  # range perms offset device inode [path]
        if len(fields) == 6 and fields[5] in (target, target + " (deleted)"):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if spans and spans[-1][0] + spans[-1][1] == start:  # adjacent: one call
                spans[-1] = (spans[-1][0], end - spans[-1][0])
            else:
                spans.append((start, end - start))
    return spans


def _libc_madvise() -> Callable[..., int]:
    libc = ctypes.CDLL(None, use_errno=True)
    madvise: Callable[..., int] = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]  # type: ignore[attr-defined]
    madvise.restype = ctypes.c_int  # type: ignore[attr-defined]
    return madvise


# Between two releases during a session open: ORT prepacks the head (the largest weight) last,
# and its codes (129 MB on a 151k-vocabulary 0.5B) were all mapped at the open's peak when
# releases came every 0.2 s: later-open peak 826-839 MB, 741-757 MB at 0.02 s, same CPU
# (the cost share bounds how often a release that costs more may run).
MIN_INTERVAL_S = 0.02


class PageReleaser:
    """`release_mapped_pages` of one file, called often but at most every few times its own
    cost, so releasing while something reads the file stays a small share of a core."""

    def __init__(
        self, path: Path, min_interval_s: float = MIN_INTERVAL_S, cost_share: float = 0.1
    ) -> None:
        self.path = path
        self.min_interval_s = min_interval_s
        self.cost_share = cost_share
        self.released = 0  # bytes dropped so far
        self._next = 0.0

    @property
    def wait_s(self) -> float:
        """Seconds until the next `maybe_release` would release (at least a millisecond)."""
        return max(0.001, self._next - time.monotonic())

    def maybe_release(self) -> None:
        if time.monotonic() >= self._next:
            self.release()

    def release(self) -> int:
        start = time.monotonic()
        dropped = release_mapped_pages(self.path)
        cost = time.monotonic() - start
        self._next = start + max(self.min_interval_s, cost / self.cost_share)
        self.released += dropped
        return dropped
