"""Tool calling with a remote OpenAI-compatible endpoint: the request fields and the stream.

Owns writing a `GenerationRequest`'s tools, tool choice and tool-call history as OpenAI's
wire fields, and `ToolCallAccumulator`: streamed ``delta.tool_calls`` entries in, the engine's
`ToolCallDelta`s and the complete `ToolCall`s out. Does not own the rest of the request
(`engine.remote.backend`) or reading the event stream (`engine.remote.stream`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.errors import RemoteError
from engine.types import GenerationRequest, Message, Role, ToolCall, ToolCallDelta


def wire_message(message: Message) -> dict[str, Any]:
    """One message as OpenAI's chat format writes it, calls and tool answers included."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.role == Role.TOOL:
        out["tool_call_id"] = message.tool_call_id
    return out


def tool_fields(request: GenerationRequest) -> dict[str, Any]:
    """``tools``, ``tool_choice`` and ``parallel_tool_calls`` ({} when no tools are offered:
    OpenAI refuses the last two without tools)."""
    if not request.tools:
        return {}
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": json.loads(t.parameters or "{}"),
            },
        }
        for t in request.tools
    ]
    choice: Any = request.tool_choice
    if choice not in ("auto", "none", "required"):
        choice = {"type": "function", "function": {"name": choice}}
    fields = {"tools": tools, "tool_choice": choice}
    if not request.parallel_tool_calls:
        fields["parallel_tool_calls"] = False
    return fields


class ToolCallAccumulator:
    """The calls of one streamed reply, built from its ``delta.tool_calls`` entries."""

    def __init__(self) -> None:
        self._calls: dict[int, list[str]] = {}  # index -> [id, name, arguments so far]

    def add(self, entry: Any, token_index: int) -> ToolCallDelta:
        """The event for one entry; RemoteError naming the field when it is malformed."""
        where = "choices[0].delta.tool_calls[]"
        if not isinstance(entry, dict):
            raise RemoteError(f"{where} must be an object")
        index = entry.get("index", len(self._calls))
        function = entry.get("function") or {}
        if not isinstance(index, int) or index < 0 or not isinstance(function, dict):
            raise RemoteError(f"{where} needs an index and a function object")
        call_id, name = entry.get("id") or "", function.get("name") or ""
        arguments = function.get("arguments") or ""
        if not all(isinstance(v, str) for v in (call_id, name, arguments)):
            raise RemoteError(f"{where}: id, function.name and function.arguments must be text")
        known = self._calls.setdefault(index, ["", "", ""])
        known[0] = known[0] or call_id
        known[1] = known[1] or name
        known[2] += arguments
        return ToolCallDelta(index, call_id, name, arguments, token_index)

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(call_id or f"call_{index}", name, arguments or "{}")
            for index, (call_id, name, arguments) in sorted(self._calls.items())
        )
