"""Taps on a reply's event stream that the engine adds around `engine.generate`.

Owns `marking_restored` (the PromptPrepared event says how many cached prompt tokens were read
back from disk) and `recording_speed` (a finished fast-path reply from a .gguf file records its
decode speed per byte of weights for the Models window's estimates). Each passes every event on
unchanged otherwise, and closing it closes the reply. Does not own generation (`engine.generate`)
or the engine (`engine.engine`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from dataclasses import replace
from pathlib import Path

from engine.hub.fit import record_decode_speed
from engine.hub.summary import decode_bytes_of_file
from engine.types import Event, Finished, PromptPrepared


def marking_restored(events: Iterator[Event], restored: int) -> Iterator[Event]:
    """``events`` with the PromptPrepared saying how many cached tokens came from disk."""
    for event in events:
        if isinstance(event, PromptPrepared):
            event = replace(event, restored_prompt_tokens=min(restored, event.cached_prompt_tokens))
        yield event


MIN_DECODE_TOKENS = 16  # shorter replies time mostly the first token's overheads


def recording_speed(events: Iterator[Event], backend: str, gguf: Path | None) -> Iterator[Event]:
    """``events`` unchanged; a finished reply on the fast path from a .gguf file records its
    decode speed per byte of weights, which the Models window turns into expected tok/s for
    other files (`engine.hub.fit`). ``yield from``: closing this closes the reply."""
    last = yield from passing_through(events)
    if last is None or gguf is None or backend not in ("onnx", "cuda"):
        return
    stats = last.stats
    if stats.completion_tokens >= MIN_DECODE_TOKENS and stats.decode_tokens_per_s > 0:
        # A figure for estimates only: never worth failing a finished reply. Per byte a token
        # reads: a mixture-of-experts model reads only its routed experts.
        with contextlib.suppress(OSError):
            record_decode_speed(decode_bytes_of_file(gguf), stats.decode_tokens_per_s)


def passing_through(events: Iterator[Event]) -> Generator[Event, None, Finished | None]:
    last: Finished | None = None
    for event in events:
        if isinstance(event, Finished):
            last = event
        yield event
    return last
