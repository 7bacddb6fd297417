"""Download progress from a worker thread to the event loop, and speed / time left.

`ProgressRelay` is the progress callback handed to `engine.hub.download`: it runs on the
download thread, keeps only the latest (done, total) and schedules one delivery on the event
loop at a time (``call_soon_threadsafe``), so a fast download never floods the GUI with
thousands of queued updates. `RateMeter` turns (time, bytes) samples into a speed over the
last few seconds and a time left. No Qt here; the dialog formats the numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

# Speed is averaged over this window: short enough to follow a changing connection, long
# enough that the shown figure does not jump at every chunk.
RATE_WINDOW_S = 4.0


class ProgressRelay:
    """Call ``deliver(done, total)`` on ``loop``'s thread with the latest value, coalesced."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, deliver: Callable[[int, int], None]
    ) -> None:
        self._loop = loop
        self._deliver = deliver
        self._lock = threading.Lock()
        self._latest: tuple[int, int] | None = None
        self._scheduled = False

    def __call__(self, done: int, total: int) -> None:
        """From the worker thread: remember the value; schedule a delivery if none is due."""
        with self._lock:
            self._latest = (done, total)
            if self._scheduled:
                return
            self._scheduled = True
        # RuntimeError: the loop is closed (the app is quitting): nobody is left to tell.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            latest, self._latest = self._latest, None
            self._scheduled = False
        if latest is not None:
            self._deliver(*latest)


class RateMeter:
    """Bytes per second over the last `RATE_WINDOW_S` seconds, and the seconds left."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def reset(self) -> None:
        """Forget the samples (a resumed download starts measuring afresh)."""
        self._samples.clear()

    def add(self, done: int) -> None:
        now = self._clock()
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[0][0] > RATE_WINDOW_S:
            self._samples.popleft()

    def bytes_per_second(self) -> float | None:
        """None until two samples far enough apart exist (no made-up first figure)."""
        if len(self._samples) < 2:
            return None
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        if t1 - t0 < 0.2:
            return None
        return max(0.0, (b1 - b0) / (t1 - t0))

    def seconds_left(self, done: int, total: int) -> float | None:
        speed = self.bytes_per_second()
        if not speed or total <= 0:
            return None
        return max(0.0, (total - done) / speed)
