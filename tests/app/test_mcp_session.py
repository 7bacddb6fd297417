"""Tool calls through `ChatSession`: a real MCP server (a tiny stdio server written in
``tests/app/mcp_servers.py`` with the official SDK) called after the user's approval, the
result saved with the reply in the real SQLite store and exported to Markdown and JSON.

The model: the real generation loop (chat template with ``tools=``, sampling, detokenizer, the
engine's tool-call parser, `Finished(TOOL_CALLS)`) over the "tools" helper's `ScriptedBackend`,
whose runner puts all the weight on the next token of a scripted reply. A scripted runner, not
a real model, because a tiny random model never calls a tool on its own and ``tool_choice``
forcing is not what the app sends (it offers tools with "auto"); what is scripted is only which
token comes next: the call's markup is parsed out of real tokens by the real engine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from app.chat.session import ChatSession, State
from app.chat.tool_rounds import ToolRounds
from app.listmodels.branch import load_branch
from app.mcp.approval import ApprovalPolicy, Decision
from app.mcp.hub import McpHub, ToolInfo
from app.portability.export import export_conversations
from engine.types import Message, Role, ToolCall
from tests.app.conftest import close_session, make_session
from tests.app.mcp_servers import server_config
from tests.engine.support.scripted import ScriptedBackend, ScriptedRunner
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

ENABLED = ("demo/add", "demo/shout", "demo/hang", "demo/crash")


def _call(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": arguments})
    return f"Let me use a tool.\n<tool_call>\n{body}\n</tool_call>"


def _reply(messages: tuple[Message, ...]) -> str:
    """Call the tool the user names; after a result, answer with it (quoted)."""
    last = messages[-1]
    if last.role == Role.TOOL:
        return f"The tool said: {last.content}"
    words = last.content.split()
    fenced = words[0] == "fenced"  # as Qwen2.5 0.5B wrote its calls: no <tool_call> tags
    tool = words[1] if fenced else words[0]
    examples: dict[str, dict[str, Any]] = {
        "add": {"a": 2, "b": 40},
        "shout": {"text": "hi <i>there</i>"},
    }
    args = examples.get(tool, {})
    if fenced:
        return "```json\n" + json.dumps({"name": tool, "arguments": args}) + "\n```"
    return _call(tool, args)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    h = McpHub()
    h.configure([server_config(tmp_path_factory.mktemp("mcp"), timeout_s=3.0)])
    yield h
    h.close()


class ChunkedPromptRunner(ScriptedRunner):
    """`ScriptedRunner` for prompts over one prefill chunk (the tools' schemas and earlier
    rounds make these long): a later multi-token run before the reply began is prompt too."""

    def extend(self, ids: Sequence[int], last_only: bool = False) -> torch.Tensor:
        if len(ids) > 1 and self._ids and len(self._ids) == self._prompt:
            self._prompt += len(ids)
            self.prompts[-1] += list(ids)
        return super().extend(ids, last_only)


@pytest.fixture(scope="module")
def backend() -> ScriptedBackend:
    scripted = ScriptedBackend(smollm2_tokenizer(), _reply)
    scripted.runner = ChunkedPromptRunner(len(scripted.tokenizer))
    return scripted


class Asker:
    """The approval step as the view runs it: records what was shown, answers as told."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.answers: list[Decision] = []
        self.on_ask: Any = None

    async def __call__(self, tool: ToolInfo, call: ToolCall) -> Decision:
        self.asked.append((tool.key, call.arguments))
        if self.on_ask is not None:
            return await self.on_ask()  # type: ignore[no-any-return]
        return self.answers.pop(0)


@pytest.fixture
def chat(run: Any, backend: ScriptedBackend, hub: McpHub, tmp_path: Path) -> Iterator[Any]:
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")  # type: ignore[arg-type]
    policy = ApprovalPolicy(enabled=dict.fromkeys(ENABLED, True))
    session.tool_rounds = ToolRounds(hub, policy)
    asker = Asker()
    session.tool_rounds.ask = asker
    yield session, asker
    close_session(session)


def _saved(run: Any, session: ChatSession) -> Any:
    assert session.conversation_id is not None
    return run(session.db.call(load_branch, session.conversation_id))[-1]


def test_allow_once_runs_the_tool_saves_and_exports_it(
    run: Any, chat: Any, backend: ScriptedBackend, tmp_path: Path
) -> None:
    session, asker = chat
    asker.answers = [Decision.ONCE, Decision.ONCE]
    run(session.send("add two numbers"))
    assert asker.asked == [("demo/add", '{"a": 2, "b": 40}')]  # shown before it ran
    reply = _saved(run, session)
    [record] = reply.tool_calls
    assert (record["name"], record["status"]) == ("add", "ok")
    assert record["result"] == "2 + 40 = 42 (secret none)"
    assert reply.record.content == "Let me use a tool.\nThe tool said: 2 + 40 = 42 (secret none)"
    assert "<tool_call>" not in reply.record.content and session.state == State.IDLE
    assert "2 + 40 = 42" in backend.prompt()  # the result went back to the model
    # "once" asks again next time; the earlier call is in the next prompt as calls + result.
    run(session.send("add again"))
    assert len(asker.asked) == 2
    assert backend.prompt(-2).count("2 + 40 = 42") == 1 + 1  # the old result, and its quote
    ids = [session.conversation_id]
    md = run(session.db.call(export_conversations, ids, "markdown", tmp_path / "md"))[0]
    markdown = md.read_text(encoding="utf-8")
    assert "<details><summary>Tools</summary>" in markdown and "2 + 40 = 42" in markdown
    js = run(session.db.call(export_conversations, ids, "json", tmp_path / "json"))[0]
    assert '"tool_calls": [' in js.read_text(encoding="utf-8")


def test_a_call_written_as_a_fenced_json_block_is_asked_about_and_runs(run: Any, chat: Any) -> None:
    """Issue 34: Qwen2.5 0.5B wrote its MCP calls as fenced JSON; Hearth showed them as a
    reply, asked nothing and ran nothing. Now the approval prompt comes, then the tool."""
    session, asker = chat
    asker.answers = [Decision.ONCE]
    run(session.send("fenced add"))
    assert asker.asked == [("demo/add", '{"a": 2, "b": 40}')]
    reply = _saved(run, session)
    assert reply.tool_calls[0]["status"] == "ok" and "```" not in reply.record.content


def test_always_stops_asking_for_that_tool_only(run: Any, chat: Any) -> None:
    session, asker = chat
    asker.answers = [Decision.ALWAYS, Decision.DENY]
    run(session.send("add"))
    run(session.send("add"))
    assert asker.asked == [("demo/add", '{"a": 2, "b": 40}')]
    assert _saved(run, session).tool_calls[0]["status"] == "ok"
    run(session.send("shout"))  # another tool is still asked about
    assert asker.asked[-1][0] == "demo/shout"
    reply = _saved(run, session)
    assert reply.tool_calls[0]["status"] == "denied"
    assert reply.record.content.endswith("The user denied this tool call.")


def test_deny_never_reaches_the_server_and_output_stays_text(run: Any, chat: Any) -> None:
    session, asker = chat
    asker.answers = [Decision.ONCE]
    run(session.send("shout"))
    result = _saved(run, session).tool_calls[0]["result"]
    assert result == "<b>HI <I>THERE</I></b>"  # kept as text; the view shows it as text


def test_a_hanging_or_crashing_server_never_blocks_the_chat(run: Any, chat: Any) -> None:
    session, asker = chat
    asker.answers = [Decision.ONCE, Decision.ONCE]
    run(session.send("hang"))
    record = _saved(run, session).tool_calls[0]
    assert record["status"] == "error" and "did not answer within 3 s" in record["result"]
    assert session.state == State.IDLE
    run(session.send("crash"))
    assert _saved(run, session).tool_calls[0]["status"] == "error"


def test_stop_cancels_a_call_waiting_for_approval(run: Any, chat: Any) -> None:
    session, asker = chat

    async def wait_forever() -> Decision:
        session.on_stop_requested()  # the user presses Stop while the approval bar shows
        await asyncio.Event().wait()
        return Decision.ONCE

    asker.on_ask = wait_forever
    run(session.send("add"))
    reply = _saved(run, session)
    assert (
        reply.record.finish_reason == "cancelled" and reply.tool_calls[0]["status"] == "cancelled"
    )
    assert session.state == State.IDLE
