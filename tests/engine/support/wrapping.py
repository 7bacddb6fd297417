"""The one fake backend the tests wrap around a real engine: `WrappingBackend`.

It forwards ``generate``, ``info`` and ``count_tokens`` to the real backend it wraps, and adds
what a test needs to see or steer, all off by default:
- ``requests``: every `GenerationRequest` it was given (what the app or the server sent);
- ``finished`` / ``started`` with `wait_for_finished` / `wait_for_started`: what the engine
  thread actually did (e.g. that a client's disconnect cancelled the generation);
- a gate: once ``armed``, the generator pauses after its first `TextDelta` until the test sets
  ``gate``. The generator is lazy, so while it waits the next token has not been sampled:
  whatever the GUI does first (move a slider, press Stop) is seen at the very next token, on
  any machine speed.
``close`` never closes the wrapped engine: the session fixture shares and owns it. Subclass it
for a backend that misbehaves on purpose (one that cannot count, one that explodes).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from engine.types import (
    Backend,
    Event,
    Finished,
    GenerationRequest,
    LiveParams,
    Message,
    ModelInfo,
    TextDelta,
)

GATE_TIMEOUT_S = 60  # a safety net only: the test opens the gate long before


class WrappingBackend:
    """A real `Backend` behind a test's hands (see the module docstring)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.requests: list[GenerationRequest] = []
        self.finished: list[Finished] = []
        self.started = 0  # generations the engine thread has begun
        self.gate = threading.Event()
        self.first_delta = threading.Event()
        self.armed = False
        self._changed = threading.Condition()

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        with self._changed:
            self.started += 1
            self.requests.append(request)
            self._changed.notify_all()
        for event in self.inner.generate(request, cancel, live):
            if isinstance(event, Finished):
                with self._changed:
                    self.finished.append(event)
                    self._changed.notify_all()
            yield event
            if self.armed and isinstance(event, TextDelta) and not self.first_delta.is_set():
                self.first_delta.set()
                self.gate.wait(GATE_TIMEOUT_S)

    def wait_for_finished(self, count: int, timeout: float = 120) -> bool:
        """Block until ``count`` generations have finished in all; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.finished) >= count, timeout)

    def wait_for_started(self, count: int, timeout: float = 120) -> bool:
        """Block until ``count`` generations have begun in all; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self.started >= count, timeout)

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        return self.inner.count_tokens(messages)

    def close(self) -> None:
        """The shared engine belongs to the session fixture: never closed here."""
