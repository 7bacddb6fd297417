"""Splitting a reasoning model's streamed reply into its thinking and its answer.

Qwen3, DeepSeek-R1 distills and QwQ write ``<think>…</think>`` before the answer. Owns
`ThinkSplitter`, a small incremental state machine: `feed` takes text deltas of any size (a tag
may be split across deltas), `finish` flushes what was held back. Pure Python: no Qt, no I/O,
no timing (the caller times the thinking).

Rules (what LM Studio and Open WebUI show for the same streams):
- An opening ``<think>`` counts only at the very start of the reply (after whitespace); the
  same text later in an answer is the answer's own text.
- ``starts_thinking=True`` is for prompts whose template already opened ``<think>`` (R1
  distills, QwQ): the reply starts inside the thinking.
- A ``</think>`` with no ``<think>`` before it means the template opened the block in the
  prompt: everything before it was thinking.
- Only the first block is thinking. The whitespace between it and the answer is dropped; a
  reply without thinking keeps every character.
- A reply that ends inside thinking (stopped, cut off) keeps its thinking and has no answer.

Text that could still become a tag is held back (at most ``len("</think>") - 1`` characters),
so no partial tag is ever shown.

`ReplyText` folds one streaming reply into a message's ``content`` (the answer) and
``reasoning`` and times the thinking; it is what `ReplyRun` feeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from app.chat.chinese_text import ReplyPostProcessor
    from app.store.records import MessageRecord

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class Phase(StrEnum):
    START = "start"  # nothing decided yet (only whitespace or a prefix of <think> seen)
    THINKING = "thinking"
    ANSWER = "answer"


class ThinkSplitter:
    """Incremental split of one reply into ``reasoning`` and ``answer`` (see module doc)."""

    def __init__(self, *, starts_thinking: bool = False, answer_only: bool = False) -> None:
        """``answer_only``: every character is answer (continuing a reply past its thinking)."""
        self.reasoning = ""
        self.answer = ""
        self.phase = Phase.THINKING if starts_thinking else Phase.START
        self._held = ""  # undecided text: a possible tag prefix, or leading whitespace
        self._opened = starts_thinking  # an opening tag was seen (or given by the prompt)
        self._closed = False  # the thinking block ended; the rest is plain answer
        self._trim = not answer_only  # drop the answer's leading whitespace
        if answer_only:
            self.phase, self._opened, self._closed = Phase.ANSWER, True, True

    @property
    def thinking(self) -> bool:
        return self.phase == Phase.THINKING

    def feed(self, text: str) -> None:
        """Take the next delta; `reasoning` / `answer` grow by what is now certain."""
        self._held += text
        while self._held:
            before = (self.phase, len(self._held))
            self._step()
            if (self.phase, len(self._held)) == before:
                return  # waiting for more text

    def finish(self) -> None:
        """The reply ended: release held text where it stands."""
        held, self._held = self._held, ""
        if self.phase == Phase.THINKING:
            self.reasoning += held
        elif self.phase == Phase.START:
            self.answer += held
            self.phase = Phase.ANSWER if held else self.phase
        elif self._opened:
            self._add_answer(held)
        else:
            self.answer += held

    def _step(self) -> None:
        if self.phase == Phase.START:
            self._step_start()
        elif self.phase == Phase.THINKING:
            self._step_thinking()
        else:
            self._step_answer()

    def _step_start(self) -> None:
        stripped = self._held.lstrip()
        if stripped.startswith(OPEN_TAG):
            self._held = stripped[len(OPEN_TAG) :]
            self._opened = True
            self.phase = Phase.THINKING
        elif stripped and not OPEN_TAG.startswith(stripped):
            self.phase = Phase.ANSWER  # no opening tag: an answer (maybe thinking; see rules)
        # else: only whitespace or a prefix of <think> so far: wait

    def _step_thinking(self) -> None:
        at = self._held.find(CLOSE_TAG)
        if at >= 0:
            self.reasoning += self._held[:at]
            self._held = self._held[at + len(CLOSE_TAG) :]
            self._closed = True
            self.phase = Phase.ANSWER
            return
        keep = _tag_prefix_len(self._held, CLOSE_TAG)
        self.reasoning += self._held[: len(self._held) - keep]
        self._held = self._held[len(self._held) - keep :]

    def _step_answer(self) -> None:
        if self._closed or self._opened:
            self._add_answer(self._held)
            self._held = ""
            return
        # No tag seen yet: a late </think> means the prompt opened the block.
        at = self._held.find(CLOSE_TAG)
        if at >= 0 and OPEN_TAG in self.answer + self._held[:at]:
            self._closed = True  # an answer that talks about the tags: plain text from here
            return
        if at >= 0:
            self.reasoning = (self.answer + self._held[:at]).strip("\n")
            self.answer = ""
            self._held = self._held[at + len(CLOSE_TAG) :]
            self._opened = self._closed = True
            return
        keep = _tag_prefix_len(self._held, CLOSE_TAG)
        self.answer += self._held[: len(self._held) - keep]  # no think block: text as written
        self._held = self._held[len(self._held) - keep :]

    def _add_answer(self, text: str) -> None:
        self.answer += text.lstrip() if self._trim and not self.answer else text


def _tag_prefix_len(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


def split_reasoning(text: str, *, starts_thinking: bool = False) -> tuple[str, str]:
    """(reasoning, answer) of a whole reply, as `ThinkSplitter` streams it."""
    splitter = ThinkSplitter(starts_thinking=starts_thinking)
    splitter.feed(text)
    splitter.finish()
    return splitter.reasoning, splitter.answer


class Reply(Protocol):
    """What `ReplyText` writes into (a `MessageItem`: its record's content, reasoning and
    reasoning_seconds)."""

    @property
    def record(self) -> MessageRecord: ...

    def update(self, **changes: Any) -> None: ...


class ReplyText:
    """One reply's streamed text, split into ``reply.content`` and ``reply.reasoning``.

    A continued reply keeps what it had: new text extends the answer if there was one, and the
    thinking time adds up. Thinking from a remote endpoint (`add_reasoning`) needs no tags.
    ``clock`` is injectable so tests need no sleeping.
    """

    def __init__(self, reply: Reply, clock: Callable[[], float] = time.monotonic) -> None:
        self.reply = reply
        self._clock = clock
        self._base = (reply.record.content, reply.record.reasoning)
        self._seconds = reply.record.reasoning_seconds or 0.0
        self._splitter = self._new_splitter(starts_thinking=False)
        self._remote = ""  # thinking sent apart (ReasoningDelta)
        self._since: float | None = None  # when the current stretch of thinking began
        self._started = clock()  # the reply's start: thinking found late is timed from here
        # The chat's Chinese options (script, punctuation, spacing) apply to the answer only;
        # ``_fed`` is how much of the splitter's answer the processor has seen.
        self.processor: ReplyPostProcessor | None = None
        self._fed, self._answer = 0, ""

    def _new_splitter(self, *, starts_thinking: bool) -> ThinkSplitter:
        # Continuing an answer: no tags to look for any more.
        return ThinkSplitter(starts_thinking=starts_thinking, answer_only=bool(self._base[0]))

    def begin(self, *, opens_thinking: bool) -> None:
        """The prompt is ready; ``opens_thinking``: the template opened ``<think>`` already."""
        if opens_thinking and not self._splitter.reasoning and not self._splitter.answer:
            self._splitter = self._new_splitter(starts_thinking=True)

    @property
    def thinking(self) -> bool:
        return self._splitter.thinking or (bool(self._remote) and not self._splitter.answer)

    def add(self, text: str) -> None:
        self._splitter.feed(text)
        self._apply()

    def add_reasoning(self, text: str) -> None:
        self._remote += text
        self._apply()

    def finish(self) -> None:
        self._splitter.finish()
        self._apply(final=True)

    def _processed_answer(self, final: bool) -> str:
        answer = self._splitter.answer
        if self.processor is None:
            return answer
        if len(answer) < self._fed:  # a late </think> made the answer so far thinking
            self.processor = type(self.processor)(self.processor.options)
            self._fed, self._answer = 0, ""
        self._answer += self.processor.feed(answer[self._fed :])
        self._fed = len(answer)
        if final:
            self._answer += self.processor.flush()
        return self._answer

    def _apply(self, *, final: bool = False) -> None:
        content, reasoning = self._base
        before = self.reply.record.reasoning
        self.reply.update(
            content=content + self._processed_answer(final),
            reasoning=reasoning + self._remote + self._splitter.reasoning,
        )
        now = self._clock()
        if self._since is None and self.reply.record.reasoning != before:
            # Thinking began, or a late </think> turned the text so far into thinking.
            self._since = now if self.thinking else self._started
        if self._since is not None and (final or not self.thinking):
            self._seconds += now - self._since
            self._since = None
        if self.reply.record.reasoning:
            running = now - self._since if self._since is not None else 0.0
            self.reply.update(reasoning_seconds=self._seconds + running)
