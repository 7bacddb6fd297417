"""Reviewing a reply while it streams: the unchecked tail is held back, so flagged text is never
shown.

Owns `ReplyReview`, a small state machine fed the reply's text deltas. Text is released only
after a check has passed on the whole reply up to it. A check runs at a sentence end once
`Pace.min_tokens` tokens wait (sentence by sentence, without asking the guard about every
"OK."), and in any case when `Pace.every_tokens` tokens wait (a long run without a sentence end,
such as code). Each check sees the reply from its start, as Qwen3Guard judges a reply in
context, and the caller passes the user's turn with it. When a check flags, nothing more is
released, ever. Does not own the check itself (`engine.safety.review` puts the blocklist and the
guard behind one callable) or what a flag does to the generation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engine.errors import InvalidParamsError
from engine.types import SafetyVerdict

# A sentence ends at CJK full stops anywhere, at ".!?;" before whitespace (not "3.14" or
# "e.g.x"), and at a line break.
_SENTENCE_END = re.compile(r"[。！？；…]+[」』”’）)]*|[.!?;]+[\"')\]]*(?=\s)|\n")

Check = Callable[[str], SafetyVerdict]  # the reply so far -> verdict; may raise EngineError


@dataclass(frozen=True, slots=True)
class Pace:
    """How often a streaming reply is checked (in completion tokens waiting)."""

    # Each check re-reads the guard's ~140-token instructions after the reply (its KV cache
    # cannot keep them: they follow the new text), so fewer, larger checks cost less: a
    # sentence end after 24 tokens, or 64 tokens without one (docs/safety.md has the figures).
    min_tokens: int = 24
    every_tokens: int = 64

    def __post_init__(self) -> None:
        if not 1 <= self.min_tokens <= self.every_tokens:
            raise InvalidParamsError(
                f"the review pace needs 1 <= min_tokens <= every_tokens, got "
                f"{self.min_tokens} and {self.every_tokens}"
            )


class ReplyReview:
    """Feed ``(text, token_index)`` per delta; get back the text that may be shown."""

    def __init__(self, check: Check, flags: Callable[[SafetyVerdict], bool], pace: Pace) -> None:
        self._check = check
        self._flags = flags
        self.pace = pace
        self.released = ""  # shown: every check up to its end passed
        self._pending = ""  # received, not yet checked
        self._tokens_at_release = 0
        self.flagged: SafetyVerdict | None = None
        self.last: SafetyVerdict | None = None  # the latest verdict (Safe, or the flag)
        self.checks = 0

    def feed(self, text: str, token_index: int) -> str:
        """The part of the reply that is now checked and safe ("" while held or flagged)."""
        if self.flagged is not None:
            return ""
        self._pending += text
        waiting = token_index - self._tokens_at_release
        if waiting >= self.pace.every_tokens:
            return self._release(len(self._pending), token_index)
        if waiting >= self.pace.min_tokens:
            cut = _last_sentence_end(self._pending)
            if cut:
                return self._release(cut, token_index)
        return ""

    def finish(self) -> str:
        """At the end of the reply: check what is still held; return it if it passed."""
        if self.flagged is not None or not self._pending:
            return ""
        return self._release(len(self._pending), self._tokens_at_release)

    def _release(self, cut: int, token_index: int) -> str:
        candidate = self.released + self._pending[:cut]
        self.checks += 1
        verdict = self._check(candidate)
        self.last = verdict
        if self._flags(verdict):
            self.flagged = verdict
            return ""
        out, self._pending = self._pending[:cut], self._pending[cut:]
        self.released = candidate
        # Tokens of a kept tail are counted again at the next check: a slight overcount that
        # only brings that check sooner.
        self._tokens_at_release = token_index
        return out


def _last_sentence_end(text: str) -> int:
    """The offset just after the last sentence end in ``text``, 0 when there is none."""
    end = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
    return end
