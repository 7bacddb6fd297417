"""The decode thread governor (`engine.kernels.governor`) and its cap on the native ops.

The governor is driven by a simulated machine on simulated time (step time as a function
of threads and of whether another program holds a core, the shape measured here: two
threads twice as fast as one when idle, seven times slower when a core is taken): idle, it
stays on every core and its losing probes cost little; when a program takes a core it moves
to fewer threads within a few steps, its probes back up cost little, and it returns within
seconds once the core is free; one slow step alone moves nothing; an untimed run (a
prefill) takes the current count. Then a real runner on a tiny qwen35 file whose graph runs
the native ops: each decode step sets the library's cap to its count, a prefill lifts a cap
left set, and so does a runner without a governor.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.kernels import native, pressure
from engine.kernels.governor import (
    FIRST_INTERVAL,
    FIRST_PROBE,
    HOLD_SPIN_US,
    MAX_PROBE_SECONDS,
    SPIN_US,
    ThreadGovernor,
    latest_snapshot,
)


def _machine(threads: int, contended: bool) -> float:
    if contended:
        return 0.080 if threads == 1 else 0.530
    return 0.040 / threads


class _Sim:
    """A governor on simulated time: each step advances the clock by its own duration."""

    def __init__(self, cores: int) -> None:
        self.now = 0.0
        self.caps: list[int] = []
        self.g = ThreadGovernor(cores, self.caps.append, clock=lambda: self.now)

    def run(self, steps: int, contended: bool) -> list[int]:
        used = []
        for _ in range(steps):
            self.g.before_step()
            used.append(self.g.step_threads)
            seconds = _machine(self.g.step_threads, contended)
            self.now += seconds
            self.g.record(seconds)
        return used


def test_an_idle_machine_keeps_every_core_and_probes_rarely() -> None:
    sim = _Sim(2)
    used = sim.run(2000, contended=False)
    assert sim.g.current == 2
    fewer = sum(1 for t in used if t < 2)
    assert 0 < fewer <= 0.03 * len(used)  # it does look, and rarely
    assert set(sim.caps) == {1, 0}  # the cap is set for probes and lifted after them


def test_a_taken_core_moves_it_to_fewer_threads_and_back_within_seconds() -> None:
    sim = _Sim(2)
    sim.run(600, contended=False)  # settled, probes spaced out
    used = sim.run(6, contended=True)
    assert sim.g.current == 1 and used[-1] == 1  # within a few steps of the slowdown
    began, used = sim.now, sim.run(400, contended=True)
    two = sum(1 for t in used if t == 2)  # losing probes back up end after one step
    # 16, 32, 64 ... steps apart, then every MAX_PROBE_SECONDS: 6% of the first 34 s
    assert two > 0 and two * 0.530 <= 0.08 * (sim.now - began)
    began = sim.now
    sim.run(int(MAX_PROBE_SECONDS / 0.040) + 2 * FIRST_INTERVAL, contended=False)
    assert sim.g.current == 2  # the core given back is noticed within seconds
    assert sim.now - began < 2 * MAX_PROBE_SECONDS


def test_the_snapshot_tells_a_taken_core_from_an_idle_machine() -> None:
    sim = _Sim(2)
    sim.run(600, contended=False)
    idle = latest_snapshot()
    assert idle is not None and (idle.cores, idle.threads, idle.slowdowns) == (2, 2, 0)
    sim.run(6, contended=True)
    taken = latest_snapshot()
    assert taken is not None and taken.threads == 1 and taken.slowdowns >= 1


def test_a_single_slow_step_is_not_a_taken_core() -> None:
    sim = _Sim(2)
    sim.run(100, contended=False)
    sim.g.before_step()
    sim.g.record(1.0)  # a GC pause, a long context's first step
    used = sim.run(3, contended=False)
    assert used == [2, 2, 2]


def test_one_core_never_probes() -> None:
    sim = _Sim(1)
    assert set(sim.run(300, contended=True)) == {1} and set(sim.caps) == {0}


def test_an_untimed_run_takes_the_current_count_and_drops_a_probe() -> None:
    sim = _Sim(2)
    sim.run(FIRST_PROBE, contended=False)
    assert sim.g.step_threads == 1  # a probe is due
    sim.g.settle_cap()
    assert sim.caps[-1] == 0 and sim.g.step_threads == 2  # a prefill runs on every thread
    sim.run(1, contended=False)
    assert sim.g.step_threads == 1  # the probe comes back at the next step


def test_a_native_runner_governs_its_decode_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native.serves():
        pytest.skip("the native kernel ops do not run here")
    from bench.synth.qwen35 import write_tiny_qwen35
    from tests.engine.support.fast_runner import build_fast_runner

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")  # every matrix on the native ops
    monkeypatch.delenv("HEARTH_THREAD_GOVERNOR", raising=False)
    # The step times alone decide here (no machine counters), so the probe FIRST_PROBE steps
    # in comes whether this machine is idle or busy (`test_governor_start` covers counters).
    monkeypatch.setattr(pressure, "read_host", lambda: None)
    path = tmp_path / "qwen35-Q8_0.gguf"
    write_tiny_qwen35(path, "Q8_0")
    runner = build_fast_runner(path, window=256, threads=2)
    assert runner is not None and runner.kernel_ops == "native"
    g = runner._governor
    assert isinstance(g, ThreadGovernor) and g.cores == 2
    try:
        native.set_thread_cap(1)  # as an earlier runner may have left it
        runner.extend([1, 17, 230, 4051, 99])  # a prefill: the current count, every thread
        assert native.thread_cap() == 0
        seen = []
        for token in range(3, 3 + FIRST_PROBE + 2):
            threads = g.step_threads
            runner.extend([token])  # each step sets the cap its count needs, then runs
            seen.append(native.thread_cap())
            assert seen[-1] == (threads if threads < g.cores else 0)
        assert 1 in seen  # the first probe (fewer threads first) ran on the capped ops
        monkeypatch.setenv("HEARTH_THREAD_GOVERNOR", "0")
        native.set_thread_cap(1)
        native.set_pool_spin(HOLD_SPIN_US)  # an earlier governor's, beside idle-priority work
        plain = build_fast_runner(path, window=256, threads=2)
        assert plain is not None and plain._governor is None
        assert native.thread_cap() == 0  # a runner without one lifts any cap left set
        assert native.pool_spin() == SPIN_US  # and any long spin
    finally:
        native.set_thread_cap(0)
        native.set_pool_spin(SPIN_US)
