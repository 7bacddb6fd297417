"""OpenAI's tool-calling fields on the wire, for the local server.

Owns validating a chat body's ``tools``, ``tool_choice`` and ``parallel_tool_calls``, the
``tool`` messages and assistant ``tool_calls`` of the conversation, and writing
``message.tool_calls`` back. Every bad field is an `ApiError(400)` naming it. Does not own
the rest of the wire format (`engine.serve.schema`) or parsing calls out of replies
(`engine.tools`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.serve.api_error import ApiError
from engine.types import Message, Role, ToolCall, ToolSpec

MAX_TOOLS = 512  # a client sending more means a bug, not a model that could choose among them


def _error(message: str, param: str) -> Exception:
    return ApiError(400, message, param=param)


def parse_tool_fields(body: dict[str, Any]) -> tuple[tuple[ToolSpec, ...], str, bool]:
    """(tools, tool_choice, parallel_tool_calls) of a chat body, OpenAI's defaults filled."""
    raw = body.get("tools") or []
    if not isinstance(raw, list) or len(raw) > MAX_TOOLS:
        raise _error(f"tools must be an array of at most {MAX_TOOLS} tools", "tools")
    tools = tuple(_tool(entry, f"tools[{i}]") for i, entry in enumerate(raw))
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise _error("tools: two tools have the same name", "tools")
    choice = _tool_choice(body.get("tool_choice"), names)
    parallel = body.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise _error("parallel_tool_calls must be true or false", "parallel_tool_calls")
    return tools, choice, parallel


def _tool(entry: Any, where: str) -> ToolSpec:
    if not isinstance(entry, dict) or entry.get("type", "function") != "function":
        raise _error(f'{where} must be an object with "type": "function"', where)
    function = entry.get("function")
    if not isinstance(function, dict):
        raise _error(f"{where}.function must be an object", where)
    name = function.get("name")
    if not isinstance(name, str) or not name or len(name) > 64:
        raise _error(f"{where}.function.name must be a name of 1 to 64 characters", where)
    description = function.get("description") or ""
    if not isinstance(description, str):
        raise _error(f"{where}.function.description must be a string", where)
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, dict):
        raise _error(f"{where}.function.parameters must be a JSON Schema object", where)
    return ToolSpec(name, description, json.dumps(parameters, ensure_ascii=False))


def _tool_choice(raw: Any, names: list[str]) -> str:
    if raw is None:
        return "auto"
    if raw in ("auto", "none", "required"):
        if raw == "required" and not names:
            raise _error('tool_choice "required" needs tools', "tool_choice")
        return str(raw)
    if isinstance(raw, dict) and raw.get("type") == "function":
        function = raw.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name in names:
            return name
        raise _error(f"tool_choice names a function that is not in tools: {name!r}", "tool_choice")
    raise _error(
        'tool_choice must be "auto", "none", "required" or '
        '{"type": "function", "function": {"name": ...}}',
        "tool_choice",
    )


def parse_message(item: dict[str, Any], role: str, content: str, where: str) -> Message:
    """One chat message, with an assistant's ``tool_calls`` or a tool's ``tool_call_id``."""
    calls = item.get("tool_calls") or []
    if role != Role.ASSISTANT and calls:
        raise _error(f"{where}.tool_calls is only for assistant messages", where)
    if not isinstance(calls, list):
        raise _error(f"{where}.tool_calls must be an array", where)
    parsed = tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls))
    call_id = item.get("tool_call_id") or ""
    name = item.get("name") or ""
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise _error(f"{where}.tool_call_id and name must be strings", where)
    if role != Role.TOOL:
        call_id = ""
    return Message(role, content, tool_calls=parsed, tool_call_id=call_id, name=name)


def _call(entry: Any, where: str) -> ToolCall:
    function = entry.get("function") if isinstance(entry, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _error(f"{where} must have function.name", where)
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, dict):  # some clients send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise _error(f"{where}.function.arguments must be JSON text", where)
    call_id = entry.get("id") or ""
    return ToolCall(str(call_id), function["name"], arguments)


def reply_tool_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """``message.tool_calls`` of a non-streamed reply."""
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for c in calls
    ]
