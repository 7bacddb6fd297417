"""Finding marker strings in streamed text: the one helper the harmony channel splitter
(`engine.harmony`) and the tool-call parsers (`engine.tools.parse`) share.

Owns locating the earliest of several markers, and measuring how much of a text's end could
still grow into one (that part is held back until the next piece decides it). Does not own what
any marker means.
"""

from __future__ import annotations


def first_marker(text: str, markers: tuple[str, ...]) -> tuple[int, str | None]:
    """(offset, marker) of the earliest of ``markers`` in ``text``; (len(text), None) if none."""
    best: tuple[int, str | None] = (len(text), None)
    for marker in markers:
        at = text.find(marker)
        if 0 <= at < best[0]:
            best = (at, marker)
    return best


def partial_marker_len(text: str, markers: tuple[str, ...]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of one of ``markers``."""
    longest = max(len(m) for m in markers) - 1
    for n in range(min(longest, len(text)), 0, -1):
        tail = text[-n:]
        if any(m.startswith(tail) for m in markers):
            return n
    return 0
