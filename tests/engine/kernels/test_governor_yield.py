"""The decode thread governor beside a neighbour that yields its core (`engine.kernels.pressure`).

Hearth's own background indexing runs at ``SCHED_IDLE``: it takes a core only while nobody
else wants it, so a core it holds is free for a reply's second thread. Here:
- a replayed machine (simulated time, the step times of a real 0.5B qwen2 on 2 cores) where a
  reply that starts at a remembered single thread beside the indexer goes back to two threads
  within its first steps, and a reply at two threads stays there;
- real child processes and a real thread on this machine, read through ``/proc`` with no
  mock: a ``SCHED_IDLE`` busy loop's CPU time is counted as a free core and a normal one's is
  not, our own ``SCHED_IDLE`` thread's run-queue wait is not counted as ours, and a governor
  at one thread beside a ``SCHED_IDLE`` busy child probes two threads after its first steps.
The real-process tests wait for the children's CPU time (no timed assertion); where other
programs leave the ``SCHED_IDLE`` child too little CPU for a decision, they skip and say so.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from engine.kernels.governor import IDLE_FREE, ThreadGovernor, early_probe
from engine.kernels.pressure import (
    HostSample,
    Pressure,
    ThreadMemory,
    pressure,
    read_host,
    yields,
)
from tests.engine.support.governor_replay import ReplayedGovernor

NORMAL, IDLE = os.SCHED_OTHER, os.SCHED_IDLE
# threads → (step seconds, our waiting cores, idle cores, cores the SCHED_IDLE indexer used):
# beside it, two threads run almost at idle speed (the indexer gives way at each wake-up)
BESIDE_INDEXER = {2: (0.019, 0.02, 0.0, 0.05), 1: (0.030, 0.0, 0.0, 1.0)}


def test_a_core_held_by_a_yielding_task_is_free() -> None:
    assert early_probe(1, 2, Pressure(waiting=0.0, idle=0.0, yielding=0.9)) == 2
    assert early_probe(1, 2, Pressure(waiting=0.0, idle=0.0, yielding=0.0)) is None  # taken
    assert early_probe(2, 2, Pressure(waiting=0.02, idle=0.0, yielding=0.1)) is None
    assert yields(IDLE, 0, NORMAL, 0) and yields(NORMAL, 19, NORMAL, 0)
    assert not yields(NORMAL, 5, NORMAL, 0) and not yields(NORMAL, 19, NORMAL, 10)
    assert not yields(IDLE, 0, IDLE, 0)  # nothing yields to a SCHED_IDLE thread


def test_a_yielding_task_counts_only_where_both_samples_saw_it() -> None:
    before = HostSample(10.0, 0.0, 0.0, {7: 3.0})
    after = HostSample(10.5, 0.0, 0.0, {7: 3.4, 8: 100.0})  # 8 started: its past is not ours
    seen = pressure(before, after)
    assert seen is not None and seen.yielding == pytest.approx(0.8) and seen.idle == 0.0


def test_a_reply_remembering_one_thread_goes_back_to_two_beside_the_indexer(
    tmp_path: Path,
) -> None:
    memory = ThreadMemory(tmp_path / "threads.json")
    memory.save(2, 1)  # the last reply settled beside a busy program that has since ended
    replay = ReplayedGovernor(BESIDE_INDEXER.__getitem__, memory)
    used = replay.reply(128)
    assert used[:3] == [1, 1, 1] and used[3] == 2 and used[8:] == [2] * 120
    assert memory.load(2) == 2
    assert replay.reply(128) == [2] * 128  # the next reply starts there and stays


# ----------------------------------------------------------- real processes, real /proc

_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    sum(range(10000))\n"


@contextlib.contextmanager
def _busy_child(policy: int) -> Iterator[psutil.Process]:
    """A Python loop that never sleeps, at ``policy`` (set before it starts its loop)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BUSY],
        preexec_fn=lambda: os.sched_setscheduler(0, policy, os.sched_param(0)),
    )
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def _cpu(child: psutil.Process) -> float:
    times = child.cpu_times()
    return float(times.user + times.system)


def _window(children: list[psutil.Process], cpu_s: float) -> tuple[Pressure, list[float]]:
    """Real samples around a span in which every child ran ``cpu_s`` of CPU (or 20 s went
    by): the pressure read, and each child's CPU share of the span as psutil reads it."""
    start = [_cpu(c) for c in children]
    before = read_host()
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and any(
        _cpu(c) - s < cpu_s for c, s in zip(children, start, strict=True)
    ):
        time.sleep(0.05)
    after = read_host()
    assert before is not None and after is not None
    span = after.at - before.at
    shares = [(_cpu(c) - s) / span for c, s in zip(children, start, strict=True)]
    seen = pressure(before, after)
    assert seen is not None
    return seen, shares


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or not hasattr(os, "SCHED_IDLE"), reason="Linux only"
)


@needs_proc
def test_a_sched_idle_child_is_counted_free_and_a_normal_one_taken() -> None:
    with _busy_child(IDLE) as lowered, _busy_child(NORMAL) as normal:
        time.sleep(0.2)  # both running: their start-up is not in the window
        first = read_host()
        assert first is not None
        assert lowered.pid in first.yielded and normal.pid not in first.yielded
        seen, (lowered_share, normal_share) = _window([lowered, normal], 0.3)
    if normal_share < 0.3:
        pytest.skip(f"other programs left the normal child {normal_share:.2f} of a core")
    # The yielding cores are the lowered child's alone, none of the normal one's (a niced
    # kernel thread may add a tick); psutil and /proc count the same ticks.
    assert seen.yielding == pytest.approx(lowered_share, abs=0.1)


@needs_proc
def test_our_own_sched_idle_thread_is_not_our_waiting() -> None:
    stop = threading.Event()
    tid: list[int] = []

    def indexer() -> None:  # as app.documents.background's worker: SCHED_IDLE, this thread
        os.sched_setscheduler(0, IDLE, os.sched_param(0))
        tid.append(threading.get_native_id())
        block = b"x" * (1 << 20)
        while not stop.is_set():
            hashlib.sha256(block).digest()  # releases the GIL: a real busy native thread

    worker = threading.Thread(target=indexer, daemon=True)
    worker.start()
    try:
        while not tid:
            time.sleep(0.01)
        time.sleep(0.3)  # the worker runs (and waits for a core on a busy machine)
        sample = read_host()
        # read after the sample: every counter only grows
        tasks = {int(t.name): int((t / "schedstat").read_text().split()[1])
                 for t in Path("/proc/self/task").iterdir()}  # fmt: skip
    finally:
        stop.set()
        worker.join()
    assert sample is not None
    assert tid[0] in sample.yielded and threading.get_native_id() not in sample.yielded
    # what the worker waited for a core is left out of ours
    assert sample.waited <= (sum(tasks.values()) - tasks[tid[0]]) / 1e9 + 1e-6


@needs_proc
def test_a_governor_at_one_thread_beside_a_sched_idle_child_probes_two(tmp_path: Path) -> None:
    memory = ThreadMemory(tmp_path / "threads.json")
    memory.save(2, 1)
    caps: list[int] = []
    with contextlib.ExitStack() as stack:
        # Normal busy loops on all cores but one and a SCHED_IDLE one: no core is idle, and
        # the one the lowered child holds is the only one a second thread of ours would get.
        for _ in range(max(1, min(3, (os.cpu_count() or 2) - 1))):
            stack.enter_context(_busy_child(NORMAL))
        lowered = stack.enter_context(_busy_child(IDLE))
        time.sleep(0.2)
        g = ThreadGovernor(2, caps.append, host=read_host, memory=memory)
        start = _cpu(lowered)
        began = time.monotonic()
        for _ in range(3):  # a reply's first steps: our step sleeps, as a thread at a barrier
            g.before_step()
            time.sleep(0.1)
            g.record(0.1)
        share = (_cpu(lowered) - start) / (time.monotonic() - began)
    if share < IDLE_FREE + 0.1:
        pytest.skip(f"other programs left the SCHED_IDLE child {share:.2f} of a core")
    assert caps[:3] == [1, 1, 1]
    assert g.step_threads == 2  # the lowered child's core was read as free: two are tried
