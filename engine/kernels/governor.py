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

A reply that starts beside a busy program has no fast steps to compare against, and a
128-token reply is over before a probe 128 steps in. So a reply's start (the first step, or
one after a pause of `REPLY_GAP_S`) is handled apart:
- the count starts where the last reply settled: this governor's own, or the one another
  runner or process left in the cache folder within ten minutes
  (`engine.kernels.pressure.ThreadMemory`);
- after its first `RECENT_STEPS` steps, the machine's counters over them
  (`engine.kernels.pressure`: our threads' run-queue wait, the machine's idle cores) choose a
  probe at once (`early_probe`): fewer threads when ours waited for a core, more when a core
  sat idle. The probe is timed like any other and kept only if it wins, so a wrong reading
  costs one step; on an idle machine at every core neither fires and nothing is lost.
- below every core, a probe of one thread more runs timed every `UP_FIRST_INTERVAL` steps
  whatever the counters say, backing off to `UP_MAX_INTERVAL` while it loses: beside a busy
  program no core reads as idle, so counter-checked probes up never ran, though the kernel's
  pool often decodes faster on two threads there. At every core there is nothing to try, so
  an idle machine pays nothing;
- a core held by a task that yields it to us at once (``SCHED_IDLE`` or far nicer: Hearth's
  own background indexing, `engine.kernels.pressure.yields`) counts as free, not taken: our
  threads do not wait for it, and one thread fewer beside it only gives it our core;
- beside such a task, and nothing that takes a core, the kernel pool's idle workers spin
  `HOLD_SPIN_US` between a step's calls instead of the pool's `SPIN_US` (`worker_spin`): a
  worker that slept between two calls handed its core to the task, whose memory traffic and
  cache then slowed the next call (a qwen3moe beside two idle-priority memory loops: 42.9-44.8
  tok/s at 50 us, 48.1-50.8 at 1 ms; llama.cpp's spinning OpenMP threads never let it in).
  Beside a busy program at normal priority the short spin stays: there a longer one burns the
  share of a core the scheduler gives us (`engine/kernels/pool.h`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median

from engine import settings
from engine.kernels.pressure import HostSample, Pressure, ThreadMemory, pressure

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
# Below every core, a timed probe of one thread more runs every this many steps whatever the
# counters say, doubling each time it loses up to `UP_MAX_INTERVAL`: beside a busy program
# the counters show no idle core (the neighbour holds it), so the counter-checked probes
# were skipped as lost forever, yet the pool's two threads often beat one there.
UP_FIRST_INTERVAL = 32
UP_MAX_INTERVAL = 256
REPLY_GAP_S = 0.5  # a decode step this long after the last one starts a new reply
# Over a reply's first steps: our threads waiting this many cores' worth for a CPU means a
# core is taken (idle, at every core, ~0: our threads are never more than the cores); this
# many cores idle on the machine, or held by tasks that yield to us, means one is free for
# another thread.
WAITING_TAKEN = 0.25
IDLE_FREE = 0.6
SPIN_US = 50  # the pool's own idle spin (pool.h POOL_SPIN_US), microseconds
HOLD_SPIN_US = 1000  # beside a task that yields: spans the gaps between a step's calls
# Cores' worth a yielding task used over a reply's first steps that starts the long spin;
# once it runs, any use keeps it (the spin itself leaves the task little to use).
YIELDING_HOLD = 0.1


def early_probe(current: int, cores: int, seen: Pressure | None) -> int | None:
    """The count to try at once after a reply's first steps at ``current`` threads, given
    what the machine's counters ``seen`` over them (None: unknown); None to stay."""
    if seen is None:
        return None
    if current > 1 and seen.waiting >= WAITING_TAKEN:
        return current - 1
    if current < cores and seen.free >= IDLE_FREE:  # idle, or held by a task that yields
        return current + 1
    return None


def worker_spin(seen: Pressure | None, holding: bool = False) -> int:
    """The kernel pool's idle spin (µs) for the steps after a reply's first ones, given the
    counters ``seen`` over them (None: unknown) and whether the long spin already runs.
    Another program at normal priority (``taken``) keeps the short one; our own waiting does
    not decide, since a yielding task causes some by itself (`Pressure`): beside two
    idle-priority loops our threads read 0.39 cores' worth of it with nothing else running."""
    if seen is None or seen.taken >= WAITING_TAKEN:
        return SPIN_US
    if seen.yielding >= YIELDING_HOLD or (holding and seen.yielding > 0):
        return HOLD_SPIN_US
    return SPIN_US


@dataclass(frozen=True, slots=True)
class GovernorSnapshot:
    """What the latest governor measured, read-only (the app's "Why is this slow?")."""

    cores: int  # the threads it may use
    threads: int  # the count it settled on: fewer than ``cores`` when a core was taken
    slowdowns: int  # times two steps in a row ran far slower than the recent ones


_latest: ThreadGovernor | None = None  # the newest runner's governor (the cap is process-wide)


def latest_snapshot() -> GovernorSnapshot | None:
    """The newest governor's figures; None when no governor runs in this process."""
    g = _latest
    return None if g is None else GovernorSnapshot(g.cores, g.current, g.slowdowns)


def enabled() -> bool:
    """``HEARTH_THREAD_GOVERNOR=0`` keeps every thread (benchmarks of the bare kernel)."""
    return not settings.THREAD_GOVERNOR.is_off()


class ThreadGovernor:
    """Picks a thread count in [1, ``cores``] for each decode step; ``apply`` sets the cap
    (0: none); ``clock`` gives seconds (tests drive it with simulated time); ``host`` samples
    the machine's counters (`engine.kernels.pressure.read_host`; None: step times alone);
    ``memory`` keeps the settled count for the next runner or process (None: not kept);
    ``spin`` sets the kernel pool's idle spin in µs (`worker_spin`; None: left as it is)."""

    def __init__(
        self,
        cores: int,
        apply: Callable[[int], None],
        clock: Callable[[], float] = time.monotonic,
        host: Callable[[], HostSample | None] | None = None,
        memory: ThreadMemory | None = None,
        spin: Callable[[int], None] | None = None,
    ) -> None:
        self.cores = max(1, cores)
        self.current = self.cores
        self._apply = apply
        self._spin = spin
        self.spin_us = SPIN_US  # the idle spin last set (read by tests and "Why is this slow?")
        self._clock = clock
        self._host = host
        self._memory = memory
        self._last_step: float | None = None  # when the last timed step ended
        self._early: HostSample | None = None  # the counters at this reply's first step
        self._early_left = 0  # steps until this reply's early look (0: done)
        self._mark: HostSample | None = None  # the counters at the last probe (or skip)
        self._forced = False  # the next probe runs whatever the counters say
        self._recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self._interval = FIRST_PROBE
        self._countdown = FIRST_PROBE
        self._last_probe = clock()
        self._direction = -1  # the next probe's side: fewer threads first
        self._slow_steps = 0
        self._up_interval = UP_FIRST_INTERVAL
        self._up_countdown = UP_FIRST_INTERVAL
        self._probe: int | None = None
        self._probe_times: list[float] = []
        self.slowdowns = 0  # read by `latest_snapshot`
        global _latest
        _latest = self

    @property
    def step_threads(self) -> int:
        """The count the next step runs with (a probe's, while one runs)."""
        return self._probe if self._probe is not None else self.current

    def before_step(self) -> None:
        """Set the cap for the decode step about to run (every time: the cap is the
        process's, and another runner may have moved it)."""
        now = self._clock()
        if self._last_step is None or now - self._last_step >= REPLY_GAP_S:
            self._start_reply()
        self._set(self.step_threads)

    def _start_reply(self) -> None:
        """A reply's first step: start from the remembered count, look again soon."""
        self._probe = None
        remembered = self._memory.load(self.cores) if self._memory is not None else None
        if remembered is not None:
            self.current = remembered
        self._recent.clear()  # the last reply's steps are another context length, maybe
        self._slow_steps = 0
        self._early = self._mark = self._host() if self._host is not None else None
        self._early_left = RECENT_STEPS
        if self._host is None and self.current < self.cores:
            # Nothing to read the machine by: the timed probes look for a freed core soon.
            self._direction, self._countdown = 1, min(self._countdown, FIRST_INTERVAL)

    def settle_cap(self) -> None:
        """Set the current count's cap for a run that is not timed; a probe in flight is
        dropped and tried again at the next step."""
        if self._probe is not None:
            if self._probe > self.current:  # tried again unchecked, as it would have run
                self._up_countdown = min(self._up_countdown, 1)
            self._probe, self._countdown = None, 1
        self._set(self.current)

    def record(self, seconds: float) -> None:
        """The step just run took ``seconds``."""
        self._last_step = self._clock()
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
            self.slowdowns += 1
            self._recent = deque(list(self._recent)[-2:], maxlen=RECENT_STEPS)
            self._direction, self._interval, self._slow_steps = -1, FIRST_INTERVAL, 0
            self._countdown = min(self._countdown, 1)
            self._forced = True  # the step times said so: no counters asked
        if self._countdown == RECENT_STEPS and self._host is not None:
            self._mark = self._host()  # the counters over the last steps before a probe
        if self._early_left > 0:
            self._early_left -= 1
            if self._early_left == 0 and self._look_early():
                return
        if self.current < self.cores:
            self._up_countdown -= 1
        due = self._countdown <= 0 or self._clock() - self._last_probe >= MAX_PROBE_SECONDS
        if len(self._recent) < RECENT_STEPS:
            return
        if self._up_countdown <= 0 and self.current < self.cores:
            self._direction = 1  # timed, not counter-checked: the counters cannot tell
            self._start_probe(checked=True)
        elif due:
            self._start_probe()

    def _look_early(self) -> bool:
        """After a reply's first steps: start the probe the counters ask for, if any."""
        seen = pressure(self._early, self._host() if self._host is not None else None)
        if self._spin is not None and seen is not None:
            self.spin_us = worker_spin(seen, holding=self.spin_us > SPIN_US)
            self._spin(self.spin_us)
        other = early_probe(self.current, self.cores, seen)
        if other is None or len(self._recent) < RECENT_STEPS:
            if seen is not None and self._memory is not None:  # still right: keep it fresh
                self._memory.save(self.cores, self.current)
            return False
        self._direction = other - self.current
        self._start_probe(checked=True)
        return True

    def _set(self, threads: int) -> None:
        self._apply(threads if threads < self.cores else 0)

    def _start_probe(self, checked: bool = False) -> None:
        """Try the next count; unless ``checked``, only where the machine's counters since
        the last probe leave it a chance (a core taken, or one free): one that cannot win
        is skipped as lost, without the slow step it would cost."""
        self._last_probe = self._clock()
        checked, self._forced = checked or self._forced, False
        for direction in (self._direction, -self._direction):
            other = self.current + direction
            if 1 <= other <= self.cores:
                self._direction = direction
                if not checked and not self._could_win(other):
                    self._settle(lost=True)
                    return
                self._probe, self._probe_times = other, []
                return
        self._countdown = MAX_INTERVAL  # one core: nothing to try

    def _could_win(self, other: int) -> bool:
        now = self._host() if self._host is not None else None
        seen, self._mark = pressure(self._mark, now), now
        return seen is None or early_probe(self.current, self.cores, seen) == other

    def _settle(self, lost: bool) -> None:
        up = (self._probe or 0) > self.current
        margin = MARGIN_MORE if up else MARGIN_FEWER
        won = (
            self._probe is not None
            and not lost
            and median(self._probe_times) < margin * median(self._recent)
        )
        if up or (won and self._probe is not None and self._probe < self.current):
            # A probe up that lost backs the next one off; a win, or a move down, starts over.
            lost_up = up and not won
            self._up_interval = (min(2 * self._up_interval, UP_MAX_INTERVAL) if lost_up
                                 else UP_FIRST_INTERVAL)  # fmt: skip
            self._up_countdown = self._up_interval
        if won and self._probe is not None:
            self.current = self._probe  # keep going the same way next time
            self._recent = deque(self._probe_times[-RECENT_STEPS:], maxlen=RECENT_STEPS)
            self._interval = FIRST_INTERVAL
            if self._memory is not None:
                self._memory.save(self.cores, self.current)
        else:
            self._interval = min(2 * self._interval, MAX_INTERVAL)
            self._direction = -self._direction
        self._probe = None
        self._countdown = self._interval
        self._last_probe = self._clock()
