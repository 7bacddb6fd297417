"""Repacking a GGUF's matrices ahead of the graph builder, in row slices on a few threads.

Owns `RepackPipeline`: the fast-path conversion asks for repacked weights one tensor at a time
(`engine.fastpath.graph.GraphBuilder.packed`) and writes each to ``weights.bin`` before asking
for the next. Done on the calling thread alone, the file is read, repacked and written strictly
in turn, one core busy. Here the matrices the graph will ask for are planned in file order and
cut into row slices of about `SLICE_BYTES` of GGUF data; a small thread pool repacks the slices
ahead (numpy releases the GIL in the heavy loops) while the caller writes what is ready.
Rows are independent in every GGUF type (a block never spans two rows), so a slice repacks to
exactly the rows of the whole tensor's result; each worker copies its slice straight into the
tensor's preallocated arrays (no concatenation, no second copy of a tensor).

Memory stays bounded: slices are submitted while the GGUF bytes planned but not yet taken stay
under ``budget`` (the tensor asked for is always submitted in full). The caller's ``tick``
runs on the caller's thread only (at most every `TICK_S` while it waits), so a progress callback
never runs on a worker. ``done_bytes`` counts GGUF bytes repacked and ``packed_bytes`` is what they
will take repacked, for bytes-based progress.
Does not own the repacking itself (`engine.gguf.repack`), the graph or the file.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from engine import settings
from engine.cpus import usable_logical
from engine.fastpath.plan import is_graph_matrix
from engine.gguf.repack import Packed, packed_nbytes, repack

SLICE_BYTES = 8 << 20  # GGUF bytes per slice: big enough to amortise numpy's call overheads
BUDGET_BYTES = 256 << 20  # GGUF bytes planned ahead of the caller at most
TICK_S = 0.2  # the caller's tick runs at least this often while it waits
_FIELDS = ("codes", "scales", "offsets", "dense", "zero_points")


def default_workers() -> int:
    """Repacking threads: one per core, at least one, at most four (the writer needs a core)."""
    forced = settings.REPACK_THREADS.count()
    if forced:
        return forced
    return max(1, min(4, usable_logical()))


class _Job:
    """One tensor: its row slices, the arrays they fill, and whether all have landed."""

    def __init__(self, tensor: Any) -> None:
        self.name = str(tensor.name)
        self.type = tensor.tensor_type
        self.k, self.n = (int(x) for x in tensor.shape)
        self.nbytes = int(tensor.n_bytes)
        self.raw = tensor.data
        flat = np.asarray(tensor.data).reshape(-1).view(np.uint8)
        step = max(1, SLICE_BYTES // max(1, flat.size // max(1, self.n)))
        if self.n and flat.size % self.n == 0:
            self.rows: np.ndarray | None = flat.reshape(self.n, -1)
            self.slices = [(r, min(r + step, self.n)) for r in range(0, self.n, step)]
        else:  # a size that does not split into rows: one slice, so repack names the problem
            self.rows, self.slices = None, [(0, self.n)]
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.remaining = len(self.slices)
        self.submitted = 0
        self.result: Packed | None = None
        self.error: BaseException | None = None

    def run_slice(self, r0: int, r1: int) -> int:
        """Repack rows r0..r1 into the tensor's arrays; returns the GGUF bytes it covered."""
        try:
            raw = self.raw if self.rows is None else self.rows[r0:r1]
            piece = repack(self.type, raw, r1 - r0, self.k, self.name)
            with self.lock:
                if self.result is None:
                    self.result = _allocated_like(piece, self.n)
            for field in _FIELDS:
                part = getattr(piece, field)
                if part is not None:
                    getattr(self.result, field)[r0:r1] = part
        except BaseException as exc:  # handed to the caller of RepackPipeline.get
            self.error = exc
        with self.lock:
            self.remaining -= 1
            if self.remaining == 0 or self.error is not None:
                self.done.set()
        return self.nbytes * (r1 - r0) // max(1, self.n)


def _allocated_like(piece: Packed, n: int) -> Packed:
    arrays: dict[str, Any] = {
        field: np.empty((n, *part.shape[1:]), dtype=part.dtype)
        for field in _FIELDS
        if (part := getattr(piece, field)) is not None
    }
    return replace(piece, n=n, **arrays)


def _packed_nbytes(tensor: Any) -> int:
    """What `repack` will make of ``tensor`` (its GGUF size when it cannot say)."""
    try:
        k, n = (int(x) for x in tensor.shape)
        return packed_nbytes(tensor.tensor_type, n, k, str(tensor.name))
    except Exception:  # an unsupported type: `get` raises the real error later
        return int(tensor.n_bytes)


def planned_tensors(tensors: list[Any]) -> list[Any]:
    """The matrices the graph will ask for, in the order it will (roughly) ask: file order,
    with a tied head (the token embeddings, first in the file) moved to the end."""
    plan = [t for t in tensors if is_graph_matrix(t.name) and len(t.shape) == 2]
    if not any(t.name == "output.weight" for t in plan):
        plan += [t for t in tensors if t.name == "token_embd.weight" and len(t.shape) == 2]
    return plan


class RepackPipeline:
    """`get(name)` → the tensor's `Packed`, repacked ahead on ``workers`` threads."""

    def __init__(
        self,
        tensors: list[Any],
        tick: Callable[[], None] | None = None,
        workers: int | None = None,
        budget: int = BUDGET_BYTES,
    ) -> None:
        self._all = {str(t.name): t for t in tensors}
        self._jobs = {str(t.name): _Job(t) for t in planned_tensors(tensors)}
        self._queue: deque[_Job] = deque(self._jobs.values())
        self.total_bytes = sum(job.nbytes for job in self._jobs.values())
        self.packed_bytes = sum(_packed_nbytes(t) for t in planned_tensors(tensors))
        self._ahead = 0  # GGUF bytes submitted and not yet taken
        self._done = 0
        self._done_lock = threading.Lock()
        self._tick = tick or (lambda: None)
        self._budget = budget
        self._pool = ThreadPoolExecutor(workers or default_workers(), "hearth-repack")

    @property
    def done_bytes(self) -> int:
        """GGUF bytes of the planned tensors repacked so far (any thread)."""
        return self._done

    def get(self, name: str) -> Packed:
        """``name`` repacked (see `engine.gguf.repack.repack`); unplanned names on this thread."""
        job = self._jobs.pop(name, None)
        if job is None:
            t = self._all[name]
            k, n = (int(x) for x in t.shape)
            return repack(t.tensor_type, t.data, n, k, name)
        self._submit(until=job)
        while not job.done.wait(TICK_S):
            self._tick()
        self._ahead -= job.nbytes
        self._submit()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def close(self) -> None:
        """Stop the threads; slices not started are dropped."""
        self._queue.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, until: _Job | None = None) -> None:
        """Submit slices in plan order while under budget, and all of ``until``'s."""
        while self._queue:
            job = self._queue[0]
            needed = until is not None and until.submitted < len(until.slices)
            if not needed and self._ahead >= self._budget:
                return
            if job.submitted == 0:
                self._ahead += job.nbytes
            r0, r1 = job.slices[job.submitted]
            job.submitted += 1
            if job.submitted == len(job.slices):
                self._queue.popleft()
            self._pool.submit(self._run, job, r0, r1)

    def _run(self, job: _Job, r0: int, r1: int) -> None:
        done = job.run_slice(r0, r1)
        with self._done_lock:
            self._done += done
