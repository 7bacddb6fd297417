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
from concurrent.futures import Future
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
    """Feed ``(text, token_index)`` per delta; get back the text that may be shown.

    With ``submit`` (a single-thread executor's), checks run beside the generation: at a
    checkpoint the check starts and the reply goes on; its text is released when the check
    comes back safe (seen at the next delta), and at most one check is in flight. Without it,
    each check runs at its checkpoint and the generation waits for it."""

    def __init__(
        self,
        check: Check,
        flags: Callable[[SafetyVerdict], bool],
        pace: Pace,
        submit: Callable[[Callable[[], SafetyVerdict]], Future[SafetyVerdict]] | None = None,
    ) -> None:
        self._check = check
        self._flags = flags
        self.pace = pace
        self._submit = submit
        self.released = ""  # shown: every check up to its end passed
        self._pending = ""  # received, not yet checked
        self._tokens_at_release = 0
        self._in_flight: tuple[Future[SafetyVerdict], int, int] | None = None  # (check, cut, at)
        self.flagged: SafetyVerdict | None = None
        self.last: SafetyVerdict | None = None  # the latest verdict (Safe, or the flag)
        self.checks = 0

    def feed(self, text: str, token_index: int) -> str:
        """The part of the reply that is now checked and safe ("" while held or flagged)."""
        if self.flagged is not None:
            return ""
        self._pending += text
        out = self._collect(wait=False)
        if self.flagged is not None or self._in_flight is not None:
            return out
        cut = self._checkpoint(token_index)
        if cut:
            out += self._start(cut, token_index)
        return out

    def finish(self) -> str:
        """At the end of the reply: wait for a check in flight, then check what is still held;
        return what passed."""
        out = self._collect(wait=True)
        if self.flagged is not None or not self._pending:
            return out
        out += self._start(len(self._pending), self._tokens_at_release)
        return out + self._collect(wait=True)  # the last check, when it runs on its thread

    def _checkpoint(self, token_index: int) -> int:
        """Where a check should end now (0: not yet)."""
        waiting = token_index - self._tokens_at_release
        if waiting >= self.pace.every_tokens:
            return len(self._pending)
        if waiting >= self.pace.min_tokens:
            return _last_sentence_end(self._pending)
        return 0

    def _start(self, cut: int, token_index: int) -> str:
        candidate = self.released + self._pending[:cut]
        self.checks += 1
        if self._submit is not None:
            self._in_flight = (self._submit(lambda: self._check(candidate)), cut, token_index)
            return ""
        return self._settle(self._check(candidate), cut, token_index)

    def _collect(self, wait: bool) -> str:
        """The text of a finished check in flight ("" when none, or it is still running and
        ``wait`` is False). Its error (a required guard that is down) is raised here."""
        if self._in_flight is None:
            return ""
        future, cut, token_index = self._in_flight
        if not wait and not future.done():
            return ""
        self._in_flight = None
        return self._settle(future.result(), cut, token_index)

    def _settle(self, verdict: SafetyVerdict, cut: int, token_index: int) -> str:
        self.last = verdict
        if self._flags(verdict):
            self.flagged = verdict
            return ""
        out, self._pending = self._pending[:cut], self._pending[cut:]
        self.released += out
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
