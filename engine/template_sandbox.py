"""Limits on running a model's chat template: time, output size, nesting depth, cancel.

A GGUF's chat template is a program from whoever made the file. Jinja's sandbox stops it from
reaching Python internals, but not from looping for hours (nested ``range(100000)``), doubling a
string into gigabytes, recursing through a macro, or ignoring Stop. This module owns running a
render call under those limits; it does not own the render itself (`engine.text` and
transformers' ``apply_chat_template`` do that).

How: while the render runs, a trace function (this thread only) watches the template's own
compiled code (Jinja compiles templates to Python whose file name is ``<template>``):

- every line of template code checks the clock and the cancel event, and every fourth the size
  of the template's variables (so a doubling string is stopped at the cap, not at the RAM);
- every piece of output the template yields counts toward the output cap;
- every call into template code (a macro, a block) checks how deeply template code is nested;
- every other Python call during the render checks the clock and cancel (``lipsum(n=10**7)``).

The cost is about a microsecond per template line: SmolLM2's template renders 1,001 messages
in ~80 ms instead of ~6 ms; a chat of 50 messages in a few ms.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

from engine.errors import EngineError, InvalidParamsError

T = TypeVar("T")

TEMPLATE_FILE = "<template>"  # the file name Jinja gives code compiled from a string
_SIZE_EVERY = 4  # lines between looks at the template's variables (each look copies them)


@dataclass(frozen=True)
class TemplateLimits:
    """What one render may spend. ``max_output_chars`` also caps any one variable."""

    max_seconds: float = 10.0
    max_output_chars: int = 64 * 2**20
    max_depth: int = 64

    def __post_init__(self) -> None:
        if self.max_seconds <= 0:
            raise InvalidParamsError(f"max_seconds must be > 0, got {self.max_seconds}")
        if self.max_output_chars <= 0 or self.max_depth <= 0:
            raise InvalidParamsError("max_output_chars and max_depth must be > 0")


DEFAULT_LIMITS = TemplateLimits()


class TemplateLimitError(InvalidParamsError):
    """The chat template ran past one of its limits (the message says which)."""


class RenderCancelled(EngineError):
    """The cancel event was set while the chat template was rendering."""


class _Abort(BaseException):
    """Raised from the trace function; a BaseException so no ``except Exception`` in Jinja or
    transformers swallows it on its way out."""

    def __init__(self, reason: str, *, cancelled: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.cancelled = reason, cancelled


class _Watch:
    """The trace function's state for one render."""

    def __init__(self, limits: TemplateLimits, cancel: threading.Event | None) -> None:
        self.limits, self.cancel = limits, cancel
        self.deadline = time.monotonic() + limits.max_seconds
        self.output = 0
        self.lines = 0

    def check_time(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise _Abort("cancelled", cancelled=True)
        if time.monotonic() > self.deadline:
            raise _Abort(f"it ran for more than {self.limits.max_seconds:g} s")

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        self.check_time()
        if frame.f_code.co_filename != TEMPLATE_FILE:
            return None  # not template code: no per-line tracing
        if _template_depth(frame, self.limits.max_depth + 1) > self.limits.max_depth:
            raise _Abort(f"it nested macros or blocks more than {self.limits.max_depth} deep")
        return self.on_line

    def on_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.check_time()
            self.lines += 1
            if self.lines % _SIZE_EVERY == 0:
                self.check_sizes(frame)
        elif event == "return" and isinstance(arg, str):  # a generator yielding output
            self.output += len(arg)
            if self.output > self.limits.max_output_chars:
                raise _Abort(f"its output passed {self.limits.max_output_chars:,} characters")
        return self.on_line

    def check_sizes(self, frame: FrameType) -> None:
        # Checked every _SIZE_EVERY lines against a cap that much smaller: a loop iteration
        # takes at least two lines, so a value doubling each iteration stays under the limit.
        cap = self.limits.max_output_chars // _SIZE_EVERY
        for value in frame.f_locals.values():
            if _size(value) > cap:
                raise _Abort(f"a value it built passed {cap:,} characters")


def _size(value: object) -> int:
    """Length of a string/list/dict, or the largest such value held in a Jinja namespace."""
    if isinstance(value, str | list | dict | tuple):
        return len(value)
    attrs = getattr(type(value), "__mro__", ())
    if any(cls.__name__ == "Namespace" for cls in attrs):
        try:
            held = object.__getattribute__(value, "_Namespace__attrs")
        except AttributeError:
            return 0
        return max((len(v) for v in held.values() if isinstance(v, str | list | dict)), default=0)
    return 0


def _template_depth(frame: FrameType | None, stop: int) -> int:
    depth = 0
    while frame is not None and depth < stop:
        if frame.f_code.co_filename == TEMPLATE_FILE:
            depth += 1
        frame = frame.f_back
    return depth


@contextmanager
def _traced(watch: _Watch) -> Iterator[None]:
    previous = sys.gettrace()
    sys.settrace(watch.on_call)
    try:
        yield
    finally:
        sys.settrace(previous)


def run_limited(
    render: Callable[[], T],
    *,
    cancel: threading.Event | None = None,
    limits: TemplateLimits = DEFAULT_LIMITS,
) -> T:
    """``render()`` under ``limits``; raises TemplateLimitError (naming the limit) or
    RenderCancelled when ``cancel`` is set mid-render."""
    current = sys.gettrace()
    if isinstance(getattr(current, "__self__", None), _Watch):
        return render()  # already inside a limited render: the outer limits hold
    watch = _Watch(limits, cancel)
    try:
        with _traced(watch):
            return render()
    except _Abort as abort:
        if abort.cancelled:
            raise RenderCancelled("cancelled while rendering the chat template") from None
        raise TemplateLimitError(f"the model's chat template was stopped: {abort.reason}") from None
    except RecursionError:
        raise TemplateLimitError(
            "the model's chat template was stopped: it recursed too deeply"
        ) from None
    except OverflowError as exc:  # Jinja's sandbox: "Range too big", int conversions
        raise TemplateLimitError(f"the model's chat template was stopped: {exc}") from None
    except MemoryError:
        raise TemplateLimitError(
            "the model's chat template was stopped: it ran out of memory"
        ) from None
