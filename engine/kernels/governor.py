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
then tries one thread fewer or more for a few steps, and keeps whichever was faster. Two
steps in a row far slower than the recent ones (a program just started) make it try fewer at
once. Probes that lose are spaced out exponentially, up to `MAX_INTERVAL` steps or
`MAX_PROBE_SECONDS`, whichever comes first (so a machine that went idle again is noticed
within seconds), the first one after `FIRST_PROBE` steps, and a probe whose first step is
clearly slower than the current count's ends there: a steady machine pays almost nothing
either way. The cap is process-wide, so every step sets it, and a run the governor does not
time (a prefill, a speculative verify, a batched server step) runs at its current count
(`settle_cap`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from statistics import median

from engine import settings

PROBE_STEPS = 3  # steps at the other count before comparing (their median)
RECENT_STEPS = 3  # the current count's last steps that are compared (their median)
FIRST_PROBE = 128  # a new runner's steps before its first probe (a slowdown probes sooner)
FIRST_INTERVAL = 16  # steps between probes after a switch
MAX_INTERVAL = 512  # the most steps between probes once probes keep losing
MAX_PROBE_SECONDS = 15.0  # ... or this long, whichever is first
SLOWDOWN = 3.0  # two steps in a row this many times the recent median start a probe
# A probe step this many times the current median ends the probe, lost: on an idle machine
# one thread fewer is ~1.8x slower, which the first step shows; one more, under contention,
# up to 7x.
ABORT_FEWER, ABORT_MORE = 1.25, 2.0
MARGIN_FEWER = 0.9  # fewer threads win with a median under this fraction of the current's
MARGIN_MORE = 1.0  # more threads win with any gain (the cores are there to be used)


def enabled() -> bool:
    """``HEARTH_THREAD_GOVERNOR=0`` keeps every thread (benchmarks of the bare kernel)."""
    return not settings.THREAD_GOVERNOR.is_off()


class ThreadGovernor:
    """Picks a thread count in [1, ``cores``] for each decode step; ``apply`` sets the cap
    (0: none); ``clock`` gives seconds (tests drive it with simulated time)."""

    def __init__(
        self,
        cores: int,
        apply: Callable[[int], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cores = max(1, cores)
        self.current = self.cores
        self._apply = apply
        self._clock = clock
        self._recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self._interval = FIRST_PROBE
        self._countdown = FIRST_PROBE
        self._last_probe = clock()
        self._direction = -1  # the next probe's side: fewer threads first
        self._slow_steps = 0
        self._probe: int | None = None
        self._probe_times: list[float] = []

    @property
    def step_threads(self) -> int:
        """The count the next step runs with (a probe's, while one runs)."""
        return self._probe if self._probe is not None else self.current

    def before_step(self) -> None:
        """Set the cap for the decode step about to run (every time: the cap is the
        process's, and another runner may have moved it)."""
        self._set(self.step_threads)

    def settle_cap(self) -> None:
        """Set the current count's cap for a run that is not timed; a probe in flight is
        dropped and tried again at the next step."""
        if self._probe is not None:
            self._probe, self._countdown = None, 1
        self._set(self.current)

    def record(self, seconds: float) -> None:
        """The step just run took ``seconds``."""
        if self._probe is not None:
            self._probe_times.append(seconds)
            abort = ABORT_MORE if self._probe > self.current else ABORT_FEWER
            lost = seconds > abort * median(self._recent)
            if lost or len(self._probe_times) >= PROBE_STEPS:
                self._settle(lost)
            return
        slow = len(self._recent) == RECENT_STEPS and seconds > SLOWDOWN * median(self._recent)
        self._slow_steps = self._slow_steps + 1 if slow else 0
        self._recent.append(seconds)
        self._countdown -= 1
        if self._slow_steps >= 2:  # something took a core: try fewer threads now
            self._recent = deque(list(self._recent)[-2:], maxlen=RECENT_STEPS)
            self._direction, self._interval, self._slow_steps = -1, FIRST_INTERVAL, 0
            self._countdown = min(self._countdown, 1)
        due = self._countdown <= 0 or self._clock() - self._last_probe >= MAX_PROBE_SECONDS
        if due and len(self._recent) == RECENT_STEPS:
            self._start_probe()

    def _set(self, threads: int) -> None:
        self._apply(threads if threads < self.cores else 0)

    def _start_probe(self) -> None:
        self._last_probe = self._clock()
        for direction in (self._direction, -self._direction):
            other = self.current + direction
            if 1 <= other <= self.cores:
                self._probe, self._direction = other, direction
                self._probe_times = []
                return
        self._countdown = MAX_INTERVAL  # one core: nothing to try

    def _settle(self, lost: bool) -> None:
        assert self._probe is not None
        margin = MARGIN_MORE if self._probe > self.current else MARGIN_FEWER
        if not lost and median(self._probe_times) < margin * median(self._recent):
            self.current = self._probe  # keep going the same way next time
            self._recent = deque(self._probe_times[-RECENT_STEPS:], maxlen=RECENT_STEPS)
            self._interval = FIRST_INTERVAL
        else:
            self._interval = min(2 * self._interval, MAX_INTERVAL)
            self._direction = -self._direction
        self._probe = None
        self._countdown = self._interval
        self._last_probe = self._clock()
