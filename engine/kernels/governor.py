"""How many threads the kernel's native ops decode with, chosen from measured step times.

Owns `ThreadGovernor`: a runner tells it when a decode step (one token) starts and how long
it took; it sets the ops' thread cap (`hearth_set_thread_cap` in ``ortops.h``, through
`engine.kernels.native.set_thread_cap`) for the next step. Does not own the ops, the
runner (`engine.runners.onnx_runner`) or prefill, whose calls the cap does not touch.

Why: each of a decode step's ~100 kernel calls is an OpenMP region that ends at a barrier
every thread must reach. When another program holds a core (a browser, a build, a second
model), one of our threads is descheduled now and then and every region waits a scheduler
slice for it: measured here beside a perplexity run, a 0.6B's step took 532 ms on two threads
and 78 ms on one. Nothing outside the process says reliably when that happens (the load
average lags by a minute), so the governor measures: it runs at the current count, now and
then tries one thread fewer or more for a few steps, and keeps whichever was faster. A step
far slower than the recent ones (a program just started) makes it try fewer at once.
Probes that lose are spaced out exponentially, so a steady machine pays almost nothing.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from statistics import median

PROBE_STEPS = 3  # steps at the other count before comparing (their median)
RECENT_STEPS = 3  # the current count's last steps that are compared (their median)
FIRST_INTERVAL = 16  # steps between probes after a switch
MAX_INTERVAL = 512  # the longest wait between probes once probes keep losing
SLOWDOWN = 3.0  # a step this many times the recent median starts a probe at once
MARGIN = 0.9  # a probe wins with a median under this fraction of the current's


def enabled() -> bool:
    """``HEARTH_THREAD_GOVERNOR=0`` keeps every thread (benchmarks of the bare kernel)."""
    return os.environ.get("HEARTH_THREAD_GOVERNOR") != "0"


class ThreadGovernor:
    """Picks a thread count in [1, ``cores``] for each decode step; ``apply`` sets it."""

    def __init__(self, cores: int, apply: Callable[[int], None]) -> None:
        self.cores = max(1, cores)
        self.current = self.cores
        self._apply = apply
        self._applied = self.cores
        self._recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self._interval = FIRST_INTERVAL
        self._countdown = FIRST_INTERVAL
        self._direction = -1  # the next probe's side: fewer threads first
        self._probe: int | None = None
        self._probe_times: list[float] = []

    @property
    def step_threads(self) -> int:
        """The count the next step runs with (a probe's, while one runs)."""
        return self._probe if self._probe is not None else self.current

    def before_step(self) -> None:
        """Set the cap for the step about to run."""
        threads = self.step_threads
        if threads != self._applied:
            self._apply(threads if threads < self.cores else 0)  # 0: no cap
            self._applied = threads

    def record(self, seconds: float) -> None:
        """The step just run took ``seconds``."""
        if self._probe is not None:
            self._probe_times.append(seconds)
            if len(self._probe_times) >= PROBE_STEPS:
                self._settle()
            return
        slow = len(self._recent) == RECENT_STEPS and seconds > SLOWDOWN * median(self._recent)
        self._recent.append(seconds)
        self._countdown -= 1
        if slow:  # something took a core: try fewer threads once the slow steps are measured
            self._recent.clear()
            self._recent.append(seconds)
            self._direction = -1
            self._interval = FIRST_INTERVAL
            self._countdown = min(self._countdown, RECENT_STEPS - 1)
        if self._countdown <= 0 and len(self._recent) == RECENT_STEPS:
            self._start_probe()

    def _start_probe(self) -> None:
        for direction in (self._direction, -self._direction):
            other = self.current + direction
            if 1 <= other <= self.cores:
                self._probe, self._direction = other, direction
                self._probe_times = []
                return
        self._countdown = MAX_INTERVAL  # one core: nothing to try

    def _settle(self) -> None:
        assert self._probe is not None
        if median(self._probe_times) < MARGIN * median(self._recent):
            self.current = self._probe  # keep going the same way next time
            self._recent = deque(self._probe_times[-RECENT_STEPS:], maxlen=RECENT_STEPS)
            self._interval = FIRST_INTERVAL
        else:
            self._interval = min(2 * self._interval, MAX_INTERVAL)
            self._direction = -self._direction
        self._probe = None
        self._countdown = self._interval
