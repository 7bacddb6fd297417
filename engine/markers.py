"""Finding marker strings in text: what the harmony channel splitter (`engine.harmony`), the
tool-call parsers (`engine.tools.parse`) and the prompt's defusing (`engine.tools.render`) share.

Owns locating the earliest of several markers, measuring how much of a text's end could still
grow into one (that part is held back until the next piece decides it), and breaking markers
up in untrusted text (`MarkerDefuser`). Does not own what any marker means or which strings
are markers (the vocabulary's).
"""

from __future__ import annotations

import re


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


# Invisible, kept by `engine.text.clean_text` between visible characters, and it splits a marker
# so the tokenizer no longer reads it as the special token.
BREAK = "\u200c"


class MarkerDefuser:
    """Breaks every one of ``markers`` in a text with `BREAK` after its first character, so a
    tokenizer reads it as text, never as its special token. One pass over the text: only the
    markers' first characters are looked at, then the few lengths they come in (a vocabulary
    may hold thousands of added tokens: Gemma's)."""

    def __init__(self, markers: set[str] | frozenset[str]) -> None:
        self._markers = frozenset(m for m in markers if len(m) > 1)
        self._lengths = sorted({len(m) for m in self._markers}, reverse=True)
        firsts = sorted({m[0] for m in self._markers})
        self._starts = (
            re.compile("[" + "".join(re.escape(c) for c in firsts) + "]") if firsts else None
        )

    def __call__(self, text: str) -> str:
        if self._starts is None or not text:
            return text
        out: list[str] = []
        done = 0
        for found in self._starts.finditer(text):
            at = found.start()
            if at < done:
                continue
            marker = next(
                (text[at : at + n] for n in self._lengths if text[at : at + n] in self._markers),
                None,
            )
            if marker is not None:
                out += [text[done:at], marker[0], BREAK, marker[1:]]
                done = at + len(marker)
        return "".join(out) + text[done:] if out else text
