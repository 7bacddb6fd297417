"""The kernel pool's idle spin the decode thread governor picks (`engine.kernels.governor`).

Beside a task that yields its core to us (``SCHED_IDLE``: Hearth's own indexing) and nothing
that takes one, the pool's workers spin `HOLD_SPIN_US` between a step's calls so the task
never gets our cores mid-step; otherwise the pool's short `SPIN_US`. Here: the rule itself;
a governor on simulated time whose machine counters change from reply to reply (a yielding
task appears, keeps running under the long spin, stops; a busy program at normal priority
takes a core), each reply's first steps setting the spin; and a governor reading this
machine's real ``/proc`` beside a real ``SCHED_IDLE`` busy child (skipped, and saying so,
where other programs leave the child too little CPU to tell or take a core themselves, as a
parallel test run's other worker does).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.kernels.governor import (
    HOLD_SPIN_US,
    RECENT_STEPS,
    REPLY_GAP_S,
    SPIN_US,
    WAITING_TAKEN,
    YIELDING_HOLD,
    ThreadGovernor,
    worker_spin,
)
from engine.kernels.pressure import HostSample, Pressure, ThreadMemory, pressure, read_host
from tests.engine.kernels.test_governor_yield import IDLE, _busy_child, _cpu, needs_proc


def test_the_long_spin_is_for_a_yielding_task_with_no_core_taken() -> None:
    quiet = Pressure(waiting=0.0, idle=0.0, yielding=0.0)
    indexer = Pressure(waiting=0.02, idle=0.0, yielding=0.5)
    assert worker_spin(None) == SPIN_US  # nothing to read the machine by
    assert worker_spin(quiet) == SPIN_US
    assert worker_spin(indexer) == HOLD_SPIN_US
    # the task's own preemptions make us wait a little: still the long spin
    assert worker_spin(Pressure(waiting=0.4, idle=0.0, yielding=0.3)) == HOLD_SPIN_US
    # a busy program at normal priority as well: the long spin would burn our share
    assert worker_spin(Pressure(0.4, 0.0, 0.5, taken=WAITING_TAKEN)) == SPIN_US
    # under the long spin the task gets little: any use keeps it, none lets it go
    faint = Pressure(0.0, 0.0, YIELDING_HOLD / 10)
    assert worker_spin(faint) == SPIN_US
    assert worker_spin(faint, holding=True) == HOLD_SPIN_US
    assert worker_spin(quiet, holding=True) == SPIN_US


class _Machine:
    """Counters on simulated time: ``yielding`` and ``taken`` are cores' worth per second of
    a yielding task's CPU and a normal program's, integrated as the clock moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.yielding = self.taken = 0.0
        self._yielded = self._taken = 0.0

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._yielded += self.yielding * seconds
        self._taken += self.taken * seconds

    def sample(self) -> HostSample:
        # our threads wait a little whenever anything runs beside them
        waited = 0.3 * (self._yielded + self._taken)
        return HostSample(self.now, waited, 0.0, {4242: self._yielded}, {4343: self._taken})


def test_each_reply_sets_the_spin_from_its_first_steps() -> None:
    m = _Machine()
    spins: list[int] = []
    g = ThreadGovernor(2, lambda _t: None, clock=lambda: m.now, host=m.sample, spin=spins.append)

    def reply(yielding: float, taken: float = 0.0) -> int:
        m.yielding, m.taken = yielding, taken
        m.advance(2 * REPLY_GAP_S)  # a pause: the next step starts a reply
        for _ in range(RECENT_STEPS + 2):
            g.before_step()
            m.advance(0.02)
            g.record(0.02)
        return g.spin_us

    assert reply(0.0) == SPIN_US  # idle
    assert reply(0.6) == HOLD_SPIN_US  # the indexer starts
    assert reply(0.01) == HOLD_SPIN_US  # held: the spin leaves it little, it still runs
    assert reply(0.0) == SPIN_US  # it finished
    assert reply(0.6, taken=0.9) == SPIN_US  # and a busy program too: our share counts
    assert spins == [SPIN_US, HOLD_SPIN_US, HOLD_SPIN_US, SPIN_US, SPIN_US]


@needs_proc
def test_a_real_sched_idle_child_starts_the_long_spin(tmp_path: Path) -> None:
    spins: list[int] = []
    with _busy_child(IDLE) as lowered:
        time.sleep(0.2)
        memory = ThreadMemory(tmp_path / "threads.json")
        g = ThreadGovernor(2, lambda _t: None, host=read_host, memory=memory, spin=spins.append)
        start, began, before = _cpu(lowered), time.monotonic(), read_host()
        for _ in range(RECENT_STEPS):  # a reply's first steps: ours sleep, as at a barrier
            g.before_step()
            time.sleep(0.1)
            g.record(0.1)
        share = (_cpu(lowered) - start) / (time.monotonic() - began)
        seen = pressure(before, read_host())
    assert seen is not None
    if share < 2 * YIELDING_HOLD or seen.taken >= WAITING_TAKEN:
        pytest.skip(f"other programs took {seen.taken:.2f} cores, left the SCHED_IDLE child"
                    f" {share:.2f} of one")  # fmt: skip
    assert spins == [HOLD_SPIN_US], (spins, share, seen)
