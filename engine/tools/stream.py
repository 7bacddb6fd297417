"""From parsed reply pieces to the engine's events: `TextDelta`s and `ToolCallDelta`s.

Owns `ToolStream`: wraps one reply's `ToolCallParser`, gives each complete call an id
(``call_`` + 24 hex digits, as OpenAI's) and emits it as OpenAI streams ``tool_calls``: a
first `ToolCallDelta` with id and name (empty arguments), then one with the arguments.
Also the finish rule (`finish_reason`). Does not own parsing (`engine.tools.parse`) or the
generation loop (`engine.generate`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from engine.tools.parse import ParsedCall, ToolCallParser
from engine.types import FinishReason, TextDelta, ToolCall, ToolCallDelta


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def call_deltas(call: ToolCall, index: int, token_index: int) -> Iterator[ToolCallDelta]:
    """The two deltas of one complete call: id and name first, then its arguments."""
    yield ToolCallDelta(index, call.id, call.name, "", token_index)
    yield ToolCallDelta(index, "", "", call.arguments, token_index)


class ToolStream:
    """One reply's text and calls as events (see the module docstring)."""

    def __init__(
        self,
        family: str,
        *,
        in_think: bool = False,
        parallel: bool = True,
        names: frozenset[str] = frozenset(),
    ) -> None:
        # names: the offered tools, so a call written without markers is taken too (parse)
        self._parser = ToolCallParser(family, in_think=in_think, names=names)
        self._parallel = parallel  # False: only the first call is kept (parallel_tool_calls)
        self.calls: list[ToolCall] = []
        self.seen_elsewhere = 0  # calls taken from harmony's commentary channel so far

    @property
    def text(self) -> str:
        """The reply's text without its calls."""
        return self._parser.text

    def feed(self, piece: str, token_index: int) -> Iterator[TextDelta | ToolCallDelta]:
        yield from self._events(self._parser.feed(piece), token_index)

    def finish(self, token_index: int, *, cut: bool = False) -> Iterator[TextDelta | ToolCallDelta]:
        """The rest; ``cut`` (length, cancel, error): a partial call is dropped, not shown."""
        yield from self._events(self._parser.finish(cut=cut), token_index)

    def add_call(self, name: str, arguments: str, token_index: int) -> Iterator[ToolCallDelta]:
        """A call found elsewhere (harmony's commentary channel)."""
        yield from self._call(ParsedCall(name, arguments), token_index)

    def _events(
        self, items: list[str | ParsedCall], token_index: int
    ) -> Iterator[TextDelta | ToolCallDelta]:
        for item in items:
            if isinstance(item, str):
                yield TextDelta(item, token_index)
            else:
                yield from self._call(item, token_index)

    def _call(self, parsed: ParsedCall, token_index: int) -> Iterator[ToolCallDelta]:
        if self.calls and not self._parallel:
            return
        call = ToolCall(new_call_id(), parsed.name, parsed.arguments)
        self.calls.append(call)
        yield from call_deltas(call, len(self.calls) - 1, token_index)


def finish_reason(reason: FinishReason, calls: list[ToolCall]) -> FinishReason:
    """TOOL_CALLS when the reply made calls and ended on its own (EOS / stop string); a reply
    cut by length, cancel or an error keeps that reason (its complete calls still reported)."""
    return FinishReason.TOOL_CALLS if calls and reason == FinishReason.STOP else reason
