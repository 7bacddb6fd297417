"""What the app shows of a model being opened: the step, a fraction that never goes back, an ETA.

Owns turning the engine's `LoadProgress` reports into a `LoadDisplay`. A *step* is one bar: it
starts when the stage changes, or when a report in the same stage falls below the shown
fraction with a new message (the engine reads the tokenizer 0→100%, then builds the fast path
0→100%, both as "convert"). Within a step the shown fraction only grows; a step with no
measure yet (None, or still 0) is *busy*, never a frozen 0%. The time left is the engine's
``eta_s`` when it gives one (counted down between reports), else estimated from how fast the
step's fraction has moved. Qt-free, with the clock passed in, so tests feed exact sequences.
Does not own wording or widgets (`app.views.chat.load_progress`).

The bar the user sees is the whole open, not one step (``LoadDisplay.overall``): a bar that went
30% → 60% → 1% as the steps changed read as starting over. Which steps come is not known in
advance (a cached open skips conversion; a cold one goes convert → load → convert → load), so
each step is given a share of what is left of the bar when it starts (`STEP_SHARE`) and fills
it as its own fraction grows: the bar never goes back, and only reaches 100% when ready.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.types import LoadProgress

MIN_RATE_SPAN_S = 1.0  # estimate the time left from at least this long a stretch of progress
MIN_RATE_GAIN = 0.02  # ... and at least this much of the bar
# Of what is left of the whole bar when a step of this stage starts, the part it may fill.
STEP_SHARE = {"resolve": 0.05, "convert": 0.5, "load": 0.8, "warmup": 0.5, "ready": 1.0}
DEFAULT_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class LoadDisplay:
    """One frame of the loading display."""

    stage: str  # the engine's stage name ("resolve", "convert", "load", "warmup", "ready")
    message: str  # the engine's words for the step (English, from the engine)
    fraction: float | None  # in (0, 1]; None: busy (no measure yet)
    eta_s: float | None  # seconds this step still needs, where known
    step_elapsed_s: float  # how long this step has been running
    overall: float = 0.0  # the whole open in [0, 1]: never goes back across steps


@dataclass(slots=True)
class _Step:
    stage: str
    message: str
    fraction: float | None
    started: float
    base: float  # the fraction it started from (its first report's, or 0)
    rose_at: float | None = None  # when the fraction last grew
    eta: tuple[float, float] | None = None  # (time reported, seconds) from the engine
    start: float = 0.0  # the whole bar's value when this step began
    end: float = 1.0  # ... and where it stands when this step is done


class LoadTracker:
    """Folds `LoadProgress` reports into a monotonic `LoadDisplay` per step."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._step: _Step | None = None

    def reset(self) -> None:
        self._step = None

    def update(self, report: LoadProgress) -> LoadDisplay:
        now = self._clock()
        step = self._step
        if step is None or self._starts_new_step(step, report):
            base = min(1.0, max(0.0, report.fraction or 0.0))
            start = self._overall(step)
            end = start + (1.0 - start) * STEP_SHARE.get(report.stage, DEFAULT_SHARE)
            step = _Step(report.stage, report.message, None, now, base, start=start, end=end)
            self._step = step
        step.message = report.message
        if report.fraction is not None:
            self._advance(step, min(1.0, max(0.0, report.fraction)), now)
        step.eta = (now, report.eta_s) if report.eta_s is not None else None
        return self.display()

    def display(self) -> LoadDisplay:
        """The current frame (a timer calls this between reports: elapsed and ETA move on)."""
        now = self._clock()
        step = self._step
        if step is None:
            return LoadDisplay("", "", None, None, 0.0)
        shown = step.fraction if step.fraction and step.fraction > 0 else None
        return LoadDisplay(
            step.stage,
            step.message,
            shown,
            self._eta(step, now),
            now - step.started,
            self._overall(step),
        )

    @staticmethod
    def _overall(step: _Step | None) -> float:
        """The whole bar at ``step``'s latest report (0 before any step)."""
        if step is None:
            return 0.0
        return step.start + (step.end - step.start) * (step.fraction or 0.0)

    @staticmethod
    def _starts_new_step(step: _Step, report: LoadProgress) -> bool:
        if report.stage != step.stage:
            return True
        new, shown = report.fraction, step.fraction
        fell = new is not None and shown is not None and new < shown
        return fell and report.message != step.message

    @staticmethod
    def _advance(step: _Step, fraction: float, now: float) -> None:
        if step.fraction is not None and fraction <= step.fraction:
            return  # never back (and an equal report is no new measure of speed)
        step.fraction = fraction
        if fraction > step.base:
            step.rose_at = now

    @staticmethod
    def _eta(step: _Step, now: float) -> float | None:
        if step.eta is not None:
            reported_at, seconds = step.eta
            return max(0.0, seconds - (now - reported_at))
        if step.rose_at is None or step.fraction is None or step.fraction >= 1.0:
            return None
        # The average speed since the step began: steadier than the last two reports.
        gained, span = step.fraction - step.base, step.rose_at - step.started
        if span < MIN_RATE_SPAN_S or gained < MIN_RATE_GAIN:
            return None
        return max(0.0, (1.0 - step.fraction) * span / gained - (now - step.rose_at))
