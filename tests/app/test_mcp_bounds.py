"""What an MCP server sends is bounded and its names are namespaced (issue 34, A13 and A14), and
the schemas the model reads carry no SDK-generated ``title``s (issue 34, part B).

Real stdio servers written with the official SDK (``MCPServer``) run as subprocesses: one that
floods the client with ``sampling/createMessage`` requests during a call, one whose tool
schemas come from pydantic (titles included), as every Python MCP server's do.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import types

from app.mcp.approval import ApprovalPolicy, Decision, ToolBelt, schema_for_model
from app.mcp.config import ServerConfig
from app.mcp.hub import (
    MAX_SERVER_MESSAGES,
    MAX_TOOLS_PER_SERVER,
    SCHEMA_LIMIT,
    McpHub,
    ToolInfo,
    ToolResult,
    bounded_tools,
)
from engine.types import ToolCall

# The SDK's own server cannot send requests over this client's stdio (it has no back-channel
# there), so the flooding server speaks JSON-RPC by hand, as a hostile one would.
FLOOD_SOURCE = """
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "flood", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        n = msg["params"]["arguments"]["n"]
        for i in range(n):
            send({"jsonrpc": "2.0", "id": f"s{i}", "method": "sampling/createMessage",
                  "params": {"messages": [{"role": "user", "content": {"type": "text",
                  "text": "x"}}], "maxTokens": 1}})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
            {"type": "text", "text": f"sent {n}"}]}})
    elif method:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"""
WEATHER_SOURCE = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")

@server.tool()
def weather(city: str, title: str = "") -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"sunny in {city}"

server.run()
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    folder = tmp_path_factory.mktemp("mcp-flood")
    configs = []
    for name, source in (("flood", FLOOD_SOURCE), ("weather", WEATHER_SOURCE)):
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
        configs.append(ServerConfig(name, sys.executable, (str(folder / f"{name}.py"),)))
    h = McpHub()
    h.configure(configs)
    yield h
    h.close()


def test_a_server_flooding_requests_during_a_call_is_cut_off(hub: McpHub) -> None:
    """Before the bound all 20,000 requests were answered (the call returned "sent 20000";
    50,000 took 43 s and 816 MB here); now the connection drops past the bound (1.5 s, 68 MB
    for 50,000, timed by hand on a busy machine)."""
    started = time.monotonic()
    result = asyncio.run(hub.call("flood", "flood", {"n": 20_000}))
    elapsed = time.monotonic() - started
    assert result.is_error, result.text
    assert f"more than {MAX_SERVER_MESSAGES} requests" in result.text
    assert "\n" not in result.text and elapsed < 30
    again = asyncio.run(hub.call("flood", "flood", {"n": 5}))
    assert again == ToolResult("sent 5"), "the next call starts the server afresh"


def test_a_few_requests_from_a_server_are_answered_and_the_call_goes_on(hub: McpHub) -> None:
    result = asyncio.run(hub.call("flood", "flood", {"n": 40}))
    assert result == ToolResult("sent 40")


def test_the_model_sees_no_sdk_titles_but_a_property_named_title_stays(hub: McpHub) -> None:
    tools = asyncio.run(hub.list_tools("weather"))
    weather = next(t for t in tools if t.name == "weather")
    assert "title" in json.dumps(weather.schema), "the SDK writes titles ('weatherArguments')"
    belt = ToolBelt(tools, ApprovalPolicy(), hub)
    seen = json.loads(next(s for s in belt.specs if s.name == "weather").parameters)
    assert seen == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "title": {"type": "string", "default": ""}},
        "required": ["city"],
    }


def test_titles_go_at_every_level_of_a_schema() -> None:
    schema = {
        "title": "Outer",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "where": {"$ref": "#/$defs/Place"},
            "tags": {"type": "array", "items": {"title": "Tag", "type": "string"}},
            "either": {"anyOf": [{"title": "A", "type": "integer"}, {"type": "null"}]},
        },
        "$defs": {"Place": {"title": "Place", "type": "object", "properties": {}}},
    }
    assert "title" not in json.dumps(schema_for_model(schema)).replace('"title": {', "")
    assert schema_for_model(schema)["properties"]["title"] == {"type": "string"}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((server, tool))
        return ToolResult(f"{server}:{tool}")


async def _allow(_tool: ToolInfo, _call: ToolCall) -> Decision:
    return Decision.ONCE


def test_names_that_clash_after_sanitising_are_namespaced_and_none_disappears() -> None:
    """``read.file`` on one server and ``read_file`` on another both read ``read_file``; the
    later one used to replace the trusted one in the model's list."""
    tools = [
        ToolInfo("trusted", "read_file", "Read a file."),
        ToolInfo("other", "read.file", "Read a file too."),
        ToolInfo("other", "list", "List."),
        ToolInfo("x" * 80, "y" * 80),
        ToolInfo("x" * 80 + "z", "y" * 80),
    ]
    runner = Recorder()
    belt = ToolBelt(tools, ApprovalPolicy(), runner)
    names = [s.name for s in belt.specs]
    assert len(names) == len(set(names)) == len(tools)
    assert {"trusted_read_file", "other_read_file", "list"} <= set(names)
    assert all(len(n) <= 64 for n in names)
    for name in names:
        asyncio.run(belt.run(ToolCall("c", name, "{}"), _allow))
    assert sorted(runner.calls) == sorted((t.server, t.name) for t in tools)


def test_what_a_server_lists_is_bounded() -> None:
    small = {"type": "object", "properties": {"a": {"type": "string"}}}
    huge = {"type": "object", "description": "x" * (SCHEMA_LIMIT + 1)}
    listed = [
        types.Tool(name=f"t{i}", description="d" * 10_000, input_schema=huge if i == 1 else small)
        for i in range(MAX_TOOLS_PER_SERVER + 20)
    ]
    tools, note = bounded_tools("s", listed)
    assert len(tools) == MAX_TOOLS_PER_SERVER - 1
    assert "t1" not in {t.name for t in tools}
    assert max(len(t.description) for t in tools) <= 2_000
    assert note == "left out 20 tools past the first 128 and 1 with a schema over 20000 characters"


@pytest.mark.parametrize("source", [FLOOD_SOURCE, WEATHER_SOURCE])
def test_the_server_scripts_are_plain_python(source: str) -> None:
    compile(source, "server.py", "exec")  # a slip would read as a server that cannot start
