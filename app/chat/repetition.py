"""Noticing a reply stuck repeating itself, so it can be stopped rather than run to the limit.

The bundled 135M model, asked in Chinese, writes "；；；；" (or "😉\\n\\n😉\\n\\n…") until the
token limit: hundreds of tokens of nothing. `RepetitionWatch` is fed the reply's text as it
streams and names the repeated unit once the text ends with one unit of 1 to `MAX_UNIT`
characters `MIN_REPEATS` times over. Whitespace alone never counts (blank lines are the
renderer's business), nor does anything inside a code fence (a line of "=" is a comment's
ruler there). Qt-free; the app stops the reply (`app.chat.reply_run`). The engine's own
sampler has no such stop yet: the API server's clients still get the whole run. Does not own
stopping or what the user is told.
"""

from __future__ import annotations

MAX_UNIT = 4
# How many times in a row a unit must come: one character 24 times ("；" x 24, ~24 tokens; an
# emoji is ~3 tokens a time), a longer unit 12 times ("😉\n\n" x 12). Fewer would stop
# honest text ("!!!!!!!!!!" or a "——" rule); more wastes the user's time.
MIN_REPEATS = {1: 24, 2: 12, 3: 12, 4: 12}
WINDOW = max(size * n for size, n in MIN_REPEATS.items())


class RepetitionWatch:
    def __init__(self) -> None:
        self._text = ""
        self._fences = 0  # "```" seen so far: odd while inside a code block

    def add(self, delta: str) -> str | None:
        """Take ``delta``; the unit the text now ends repeating, or None."""
        joined = self._text[-3:] + delta  # a fence split across two deltas
        self._fences += joined.count("```") - self._text[-3:].count("```")
        self._text += delta
        if self._fences % 2:
            return None
        return repeated_unit(self._text[-WINDOW:])


def repeated_unit(tail: str) -> str | None:
    """The shortest unit (1 to `MAX_UNIT` characters, not all whitespace) that ``tail`` ends
    with `MIN_REPEATS` times in a row; None when there is none."""
    for size in range(1, MAX_UNIT + 1):
        unit = tail[-size:]
        needed = size * MIN_REPEATS[size]
        if len(tail) >= needed and unit.strip() and tail[-needed:] == unit * MIN_REPEATS[size]:
            return unit
    return None
