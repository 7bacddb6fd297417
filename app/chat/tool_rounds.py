"""`ToolRounds`: the chat's side of tool calling, between a reply's rounds.

A reply that ends in ``Finished(reason=TOOL_CALLS)`` is followed, call by call, by the user's
approval (the ``ask`` callback: the view's approval bar; no callback means deny), the call
through `app.mcp.McpHub`, a `ToolRecord` on the reply (folded under it, saved with it), and a
new round of generation whose prompt carries the assistant's calls and one ``tool`` message
per result. Stop cancels a pending approval or call (`cancel`). The rounds end when the model
answers without a call, or after `MAX_ROUNDS` (the last round is offered no tools).

Owns building the prompt's tool turns (`round_messages`, `expand_history` for a saved reply)
and the per-reply round state. Does not own the state machine (`ChatSession`), the servers
(`McpHub`), the policy (`ApprovalPolicy`) or widgets.
"""

from __future__ import annotations

import asyncio
from typing import Any

from app.listmodels.messages import MessageItem
from app.mcp.approval import MAX_ROUNDS, ApprovalPolicy, Ask, Decision, ToolBelt, ToolRecord
from app.mcp.hub import McpHub, ToolInfo
from engine.types import Finished, FinishReason, Message, Role, ToolCall

__all__ = ["MAX_ROUNDS", "ToolRounds", "cancelled", "expand_history", "round_messages"]


async def _deny(tool: ToolInfo, call: ToolCall) -> Decision:
    return Decision.DENY  # nobody to ask: the safe answer


class ToolRounds:
    def __init__(self, hub: McpHub | None = None, policy: ApprovalPolicy | None = None) -> None:
        self.hub = hub
        self.policy = policy or ApprovalPolicy()
        self.ask: Ask = _deny
        self._task: asyncio.Task[Any] | None = None

    async def belt(self, chat_id: str | None) -> ToolBelt | None:
        """The tools switched on for this chat (servers started as needed), or None."""
        if self.hub is None or not self.hub.servers:
            return None
        if not any(self.policy.enabled.values()) and not self.policy.per_chat.get(chat_id or ""):
            return None  # nothing switched on: no server is started for nothing
        tools = await self.hub.all_tools()
        offered = [t for t in tools if self.policy.is_enabled(chat_id, t.key)]
        return ToolBelt(offered, self.policy, self.hub) if offered else None

    def cancel(self) -> None:
        """Stop: a pending approval or call ends now (recorded as cancelled)."""
        if self._task is not None:
            self._task.cancel()

    async def run_round(
        self, reply: MessageItem, belt: ToolBelt, finished: Finished, text_before: str
    ) -> list[ToolRecord] | None:
        """Ask for and run each call of ``finished``; None when Stop cancelled the round."""
        number = 1 + max((int(c.get("round", 0)) for c in reply.tool_calls), default=-1)
        records = []
        for call in finished.tool_calls:
            self._task = asyncio.ensure_future(belt.run(call, self.ask))
            try:
                record = await self._task
            except asyncio.CancelledError:
                record = ToolRecord(call.id, call.name, call.arguments, status="cancelled",
                                    result="Stopped by the user.")  # fmt: skip
            finally:
                self._task = None
            record.text_before, record.round = text_before, number
            records.append(record)
            reply.tool_calls.append(record.to_dict())
            if record.status == "cancelled":
                return None
        return records


def round_messages(records: list[ToolRecord]) -> list[Message]:
    """One round as prompt turns: the assistant's calls, then one ``tool`` turn per result."""
    if not records:
        return []
    calls = tuple(ToolCall(r.id, r.name, r.arguments) for r in records)
    turns = [Message(Role.ASSISTANT, records[0].text_before, tool_calls=calls)]
    turns += [Message(Role.TOOL, r.result, tool_call_id=r.id, name=r.name) for r in records]
    return turns


def expand_history(item: MessageItem) -> list[Message]:
    """A saved reply with tool calls as the turns the model saw (for the next turn's prompt)."""
    rounds: dict[int, list[ToolRecord]] = {}
    for data in item.tool_calls:
        record = ToolRecord.from_dict(data)
        rounds.setdefault(record.round, []).append(record)
    turns: list[Message] = []
    used = 0
    for number in sorted(rounds):
        turns += round_messages(rounds[number])
        used += len(rounds[number][0].text_before)
    turns.append(Message(Role.ASSISTANT, item.record.content[used:], item.record.reasoning))
    return turns


def cancelled(finished: Finished | None) -> Finished | None:
    """The round's finish as a cancelled one (Stop at an approval)."""
    if finished is None:
        return None
    return Finished(FinishReason.CANCELLED, finished.stats, finished.text, finished.token_ids)
