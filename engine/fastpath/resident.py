"""The kernel's matrices read once into memory backed by huge pages, not mapped from the file.

Owns `resident_spans`: given a GGUF and the (offset, bytes) spans of the matrices a decode
step streams in full every token (``HearthMatMul``'s, `engine.fastpath.matmul_op`), it
reads them with ``preadv`` into one private anonymous buffer, 2 MiB-aligned and advised
``MADV_HUGEPAGE``, and returns a uint8 view per span; or None where that is not worth it or
not safe: off (``HEARTH_RESIDENT_WEIGHTS=0``), not Linux, transparent huge pages disabled
(``never``), or the spans more than half of the memory available now (a copy cannot be
paged back to the file the way a mapping can, so a model that barely fits stays mapped).

Why: a mapped file is mostly 4 KiB pages, and a step that streams 1 GB of weights walks
~250,000 of them. On the real Qwen2.5-Coder-1.5B Q4_K_M the matrices' share of a decode step
fell from 47-48 to 36-37 ms in ONNX Runtime's profiler once the buffer really was in huge
pages (private memory: see `resident_spans`), and its idle decode went from 0.85x to 1.02x
llama.cpp's (`bench contention --beside`, session 10 in docs/performance.md). Resident
set size does not grow: the mapped pages a step touches counted in it too, and ``preadv``
never maps the file. Does not own which matrices run on the kernel (`engine.fastpath.plan`),
the registry that shares one table between runners (`engine.fastpath.mapped`), or routed
experts (only a few of them are read per token, and their files can be tens of GB).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from engine import settings

HUGE = 2 << 20  # an x86-64 / arm64 transparent huge page
PIECE = 16 << 20  # bytes per preadv: the readers' unit of work
READERS = 2
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
MEMINFO = Path("/proc/meminfo")


class ResidentWeights:
    """One anonymous buffer holding copies of a file's spans; keep it as long as the views."""

    def __init__(self, buffer: mmap.mmap, views: list[np.ndarray]) -> None:
        self.buffer = buffer
        self.views = views


def resident_spans(path: Path, spans: Sequence[tuple[int, int]]) -> ResidentWeights | None:
    """``path``'s (offset, bytes) spans copied into huge-page memory, in order; None where
    they stay mapped (see the module docstring). Raises OSError when the file is shorter
    than a span (a file that lies about its tensors)."""
    total = sum(_padded(n) for _, n in spans)
    if total == 0 or not worth_it(total):
        return None
    # Private, not mmap's default MAP_SHARED: a shared anonymous mapping is shmem, whose huge
    # pages follow `shmem_enabled` ("never" by default) whatever the advice says, so the
    # whole buffer stayed in 4 KiB pages (AnonHugePages 0 of 956 MB on the real 1.5B).
    buffer = mmap.mmap(-1, total + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = np.frombuffer(buffer, dtype=np.uint8)
    start = (-base.ctypes.data) % HUGE  # the first span on a huge-page boundary
    with contextlib.suppress(OSError):  # an advice refused changes only speed
        buffer.madvise(mmap.MADV_HUGEPAGE, start - start % mmap.PAGESIZE, total)
    places = []  # per span: (file offset, buffer offset, bytes)
    at = start
    for offset, nbytes in spans:
        places.append((offset, at, nbytes))
        at += _padded(nbytes)
    pieces = [(o + d, b + d, min(PIECE, n - d)) for o, b, n in places for d in range(0, n, PIECE)]
    fd = os.open(path, os.O_RDONLY)
    try:
        # Two readers (preadv lets the GIL go): the copy is the kernel zeroing fresh huge
        # pages and copying from the page cache, and a second core nearly halves it.
        with ThreadPoolExecutor(max(1, min(READERS, len(pieces)))) as pool:
            list(pool.map(lambda p: _read_into(fd, base[p[1] : p[1] + p[2]], p[0]), pieces))
    finally:
        os.close(fd)
    views = []
    for _, at, nbytes in places:
        view = base[at : at + nbytes]
        view.flags.writeable = False  # the kernel only reads weights
        views.append(view)
    return ResidentWeights(buffer, views)


def worth_it(nbytes: int) -> bool:
    """Whether ``nbytes`` of weights are copied: on, Linux, huge pages not disabled, and at
    most half of the memory available now."""
    if settings.RESIDENT_WEIGHTS.is_off() or not sys.platform.startswith("linux"):
        return False
    if not hasattr(mmap, "MADV_HUGEPAGE") or _thp_mode() == "never":
        return False
    available = available_bytes()
    return available is not None and 2 * nbytes <= available


def available_bytes(meminfo: Path | None = None) -> int | None:
    """``MemAvailable`` of ``meminfo`` (default `MEMINFO`) in bytes, or None where it cannot
    be read."""
    try:
        for line in (meminfo or MEMINFO).read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _thp_mode() -> str:
    """The bracketed choice of ``transparent_hugepage/enabled`` ("always", "madvise",
    "never"), or "" where the file is absent."""
    try:
        text = THP_ENABLED.read_text(encoding="ascii")
    except OSError:
        return ""
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else ""


def _padded(nbytes: int) -> int:
    """A span's room in the buffer: the next one starts on a cache line."""
    return (nbytes + 63) // 64 * 64


def _read_into(fd: int, dest: np.ndarray, offset: int) -> None:
    """Fill ``dest`` from the file at ``offset``, in `PIECE` reads; OSError at a short file."""
    done = 0
    view = memoryview(dest)  # type: ignore[arg-type]
    while done < dest.size:
        got = os.preadv(fd, [view[done : done + PIECE]], offset + done)
        if got <= 0:
            raise OSError(f"the file ends {dest.size - done} bytes before a tensor does")
        done += got
