"""A reply's text side: sampled token ids in, the events a reader sees out.

Owns what happens to each sampled token after the sampler chose it: detokenizing (stop strings
held back, never emitted: `engine.detokenizer`), splitting a harmony model's channels (gpt-oss:
the analysis channel becomes `ReasoningDelta`s, the final one text: `engine.harmony`), taking
tool calls out of the text (`engine.tools.stream`; a harmony model's from its commentary
channel), and the reply's final text and calls for `Finished`. Does not own sampling, the
runner, the prompt or when the reply ends (`engine.generate`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from engine.detokenizer import IncrementalDetokenizer
from engine.harmony import HarmonySplitter, Kind, is_harmony, reopen_reply
from engine.text import FittedPrompt, opens_thinking
from engine.tools.render import MARKER_TOKEN_FAMILIES, tool_family
from engine.tools.stream import ToolStream, finish_reason
from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    ReasoningDelta,
    Role,
    Stats,
    TextDelta,
)


class ReplyText:
    """The text of one reply as it streams: ``add`` each sampled token, then ``flush``, then
    ``finished`` for the last event."""

    def __init__(
        self,
        tokenizer: object,
        request: GenerationRequest,
        fitted: FittedPrompt,
        stop: Sequence[str],
    ) -> None:
        # gpt-oss (harmony): its channel markers are special tokens, so they are decoded and
        # the splitter turns the analysis channel into ReasoningDeltas and the final one text.
        self.harmony = (
            HarmonySplitter(resume=_reopened(request, fitted.messages))
            if is_harmony(tokenizer)
            else None
        )
        # Tools offered: calls are parsed out of the text (engine.tools), never shown as text.
        offered = request.tools and request.tool_choice != "none"
        family = tool_family(tokenizer) if offered else ""
        self.tools = (
            ToolStream(
                family,
                in_think=opens_thinking(fitted.text),
                parallel=request.parallel_tool_calls,
                names=frozenset(t.name for t in request.tools),
            )
            if family
            else None
        )
        keep_special = self.harmony is not None or family in MARKER_TOKEN_FAMILIES  # markers
        self.detok = IncrementalDetokenizer(
            tokenizer, stop=stop, skip_special_tokens=not keep_special
        )

    @property
    def stopped(self) -> bool:
        """A stop string completed (it is never emitted)."""
        return self.detok.stopped

    def set_stop(self, stop: Sequence[str]) -> None:
        self.detok.set_stop(stop)

    def add(self, token: int, index: int) -> Iterator[Event]:
        """The events of sampled ``token`` (the reply's ``index``-th): often none yet (held
        back until the next token decides a character, a stop string or a tool call)."""
        piece = self.detok.add(token)
        if piece:
            yield from self._without_calls(self._deltas(piece, index), index)

    def flush(self, index: int, *, cut: bool) -> Iterator[Event]:
        """The held-back text once the reply ended; ``cut``: it ended before its natural end
        (length, cancel, error), so a half-written tool call is dropped, never shown as text."""
        tail = self.detok.finalize()
        if tail:
            yield from self._without_calls(self._deltas(tail, index), index)
        if self.harmony is not None:
            yield from self._without_calls(self._deltas(None, index), index)
        if self.tools is not None:
            yield from self.tools.finish(index, cut=cut)

    def finished(
        self, reason: FinishReason, stats: Stats, ids: tuple[int, ...], error: str | None
    ) -> Finished:
        """The last event: the answer's text (never the channel or call markup) and calls."""
        text = self.detok.text if self.harmony is None else self.harmony.answer
        if self.tools is None:
            return Finished(reason, stats, text, ids, error)
        text = text if self.harmony is not None else self.tools.text  # without the calls' markup
        calls = tuple(self.tools.calls)
        return Finished(finish_reason(reason, self.tools.calls), stats, text, ids, error, calls)

    def _deltas(self, piece: str | None, index: int) -> Iterator[TextDelta | ReasoningDelta]:
        """Events for decoded ``piece`` (None: the reply ended, flush the harmony splitter)."""
        if self.harmony is None:
            if piece:
                yield TextDelta(piece, index)
            return
        for kind, text in self.harmony.feed(piece) if piece is not None else self.harmony.finish():
            yield ReasoningDelta(text, index) if kind == "reasoning" else TextDelta(text, index)

    def _without_calls(
        self, events: Iterator[TextDelta | ReasoningDelta], token_index: int
    ) -> Iterator[Event]:
        """``events`` with tool calls taken out: from the text, or (harmony) from its
        commentary channel. A harmony call whose arguments are not a JSON object stays text."""
        tools, harmony = self.tools, self.harmony
        for event in events:
            if tools is not None and harmony is None and isinstance(event, TextDelta):
                yield from tools.feed(event.text, event.token_index)
            else:
                yield event
        if tools is None or harmony is None:
            return
        new, tools.seen_elsewhere = harmony.calls[tools.seen_elsewhere :], len(harmony.calls)
        for name, arguments in new:
            if _is_json_object(arguments):
                yield from tools.add_call(name, arguments, token_index)
            else:
                yield TextDelta(arguments, token_index)


def _reopened(request: GenerationRequest, messages: Sequence[Message]) -> Kind | None:
    """The harmony message a continued reply's prompt left open (see `render_prompt`)."""
    last = messages[-1] if messages else None
    if not request.continue_last or last is None or last.role != Role.ASSISTANT:
        return None
    return reopen_reply(last.reasoning, last.content)[1]


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
