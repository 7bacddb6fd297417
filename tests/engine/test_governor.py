"""The decode thread governor (`engine.kernels.governor`) and its cap on the native ops.

The governor is driven by a simulated machine (step time as a function of threads and of
whether another program holds a core, the shape measured here: two threads twice as fast
as one when idle, seven times slower when a core is taken): idle, it stays on every core
and its losing probes cost little; when a program takes a core it moves to fewer threads
within a few steps, and back once the core is free again. Then a real runner on a tiny
qwen35 file whose graph runs the native ops: its decode steps go through a governor that
sets the library's cap, and prefill leaves it alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.kernels import governor, native
from engine.kernels.governor import FIRST_INTERVAL, MAX_INTERVAL, ThreadGovernor


def _machine(threads: int, contended: bool) -> float:
    if contended:
        return 0.080 if threads == 1 else 0.530
    return 0.040 / threads


def _run(g: ThreadGovernor, steps: int, contended: bool) -> list[int]:
    used = []
    for _ in range(steps):
        g.before_step()
        used.append(g.step_threads)
        g.record(_machine(g.step_threads, contended))
    return used


def test_an_idle_machine_keeps_every_core_and_probes_rarely() -> None:
    caps: list[int] = []
    g = ThreadGovernor(2, caps.append)
    used = _run(g, 2000, contended=False)
    assert g.current == 2
    fewer = sum(1 for t in used if t < 2)
    assert 0 < fewer <= 0.03 * len(used)  # it does look, and rarely: back-off to MAX_INTERVAL
    assert set(caps) == {1, 0}  # the cap is set for probes and lifted after them


def test_a_taken_core_moves_it_to_fewer_threads_and_back() -> None:
    g = ThreadGovernor(2, lambda _t: None)
    _run(g, 600, contended=False)  # settled, probes spaced out
    used = _run(g, 12, contended=True)
    assert g.current == 1 and used[-1] == 1  # within a dozen steps of the slowdown
    used = _run(g, 200, contended=True)
    assert sum(1 for t in used if t == 2) <= 0.05 * len(used)  # probes back up stay rare
    _run(g, 2 * FIRST_INTERVAL + MAX_INTERVAL, contended=False)
    assert g.current == 2


def test_one_core_never_probes() -> None:
    caps: list[int] = []
    g = ThreadGovernor(1, caps.append)
    assert set(_run(g, 300, contended=True)) == {1} and caps == []


def test_a_native_runner_governs_its_decode_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native.serves():
        pytest.skip("the native kernel ops do not run here")
    from bench.synth.qwen35 import write_tiny_qwen35
    from tests.engine.fast_runner import build_fast_runner

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")  # every matrix on the native ops
    path = tmp_path / "qwen35-Q8_0.gguf"
    write_tiny_qwen35(path, "Q8_0")
    runner = build_fast_runner(path, window=256, threads=2)
    assert runner is not None and runner.kernel_ops == "native"
    g = runner._governor
    assert isinstance(g, ThreadGovernor) and g.cores == 2
    native.set_thread_cap(0)
    runner.extend([1, 17, 230, 4051, 99])  # a prefill: not governed
    seen = []
    for token in range(3, 3 + FIRST_INTERVAL + 2):
        runner.extend([token])  # each step sets the cap its count needs, then runs
        seen.append(native.thread_cap())
        assert seen[-1] == (g._applied if g._applied < g.cores else 0)
    assert 1 in seen  # the first probe (fewer threads first) ran on the capped ops
    native.set_thread_cap(0)
    monkeypatch.setenv("HEARTH_THREAD_GOVERNOR", "0")
    assert not governor.enabled()
