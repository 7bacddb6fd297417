"""Which tools a chat offers, which calls need asking, and running one approved call.

Safety rules this module enforces (README "Tools (MCP)"):
- every call is shown (name + arguments) and asked about, unless the user chose "always"
  for that very tool; there is no other path from a model's call to a server;
- a tool's output is untrusted: it goes back to the model as a ``tool`` message and to the
  screen as plain text (`ToolRecord.result`), and a call made after reading it is asked about
  like any other;
- tools are switched on or off per chat (default: the Tools window's switch, default off).

Owns `ApprovalPolicy` (switches and "always", saved as JSON by the app), `ToolRecord` (one call
and its outcome, saved with the reply) and `ToolBelt` (the chat's tools as `ToolSpec`s and one
call's approval + run). Does not own widgets (the ``ask`` callback is the view's) or servers
(`app.mcp.hub`). Qt-free.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from app.mcp.hub import ToolInfo, ToolResult
from engine.types import ToolCall, ToolSpec

MAX_ROUNDS = 8  # tool rounds in one reply; then the model must answer in words


class Decision(StrEnum):
    ONCE = "once"
    ALWAYS = "always"
    DENY = "deny"


@dataclass
class ToolRecord:
    """One call of a reply and what came of it (saved with the message, exported, folded)."""

    id: str
    name: str  # the tool as the model called it
    arguments: str  # JSON text, as the model wrote it
    server: str = ""
    result: str = ""  # plain text (untrusted)
    status: str = "pending"  # "ok", "error", "denied", "cancelled"
    text_before: str = ""  # the reply's text written before this round's calls
    round: int = 0  # which tool round of the reply (calls of one round share its text_before)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class ToolRunner(Protocol):
    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult: ...


Ask = Callable[[ToolInfo, ToolCall], Awaitable[Decision]]


@dataclass
class ApprovalPolicy:
    always: set[str] = field(default_factory=set)  # tool keys run without asking
    enabled: dict[str, bool] = field(default_factory=dict)  # the Tools window's switches
    per_chat: dict[str, dict[str, bool]] = field(default_factory=dict)  # chat id -> overrides

    def is_enabled(self, chat_id: str | None, key: str) -> bool:
        chat = self.per_chat.get(chat_id or "", {})
        return chat.get(key, self.enabled.get(key, False))

    def set_enabled(self, chat_id: str | None, key: str, on: bool) -> None:
        """Switch ``key`` for one chat, or (``chat_id`` None) as every chat's default."""
        if chat_id is None:
            self.enabled[key] = on
        else:
            self.per_chat.setdefault(chat_id, {})[key] = on

    def needs_asking(self, key: str) -> bool:
        return key not in self.always

    def to_json(self) -> str:
        return json.dumps(
            {"always": sorted(self.always), "enabled": self.enabled, "per_chat": self.per_chat}
        )

    @classmethod
    def from_json(cls, text: str) -> ApprovalPolicy:
        try:
            data = json.loads(text) if text else {}
            return cls(set(data.get("always", [])), dict(data.get("enabled", {})),
                       {k: dict(v) for k, v in data.get("per_chat", {}).items()})  # fmt: skip
        except (ValueError, TypeError, AttributeError):
            return cls()  # a damaged setting: everything off and asked, the safe default


class ToolBelt:
    """The tools one reply may call, under `policy`, run through `runner`."""

    def __init__(self, tools: list[ToolInfo], policy: ApprovalPolicy, runner: ToolRunner) -> None:
        self.policy, self.runner = policy, runner
        self.by_name = _exposed_names(tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as the model sees them: exposed names, schemas without ``title``s."""
        return tuple(
            ToolSpec(name, t.description, json.dumps(schema_for_model(t.schema)))
            for name, t in self.by_name.items()
        )

    async def run(self, call: ToolCall, ask: Ask) -> ToolRecord:
        """Ask (unless "always"), then run ``call``; the outcome is always a record."""
        record = ToolRecord(call.id, call.name, call.arguments)
        tool = self.by_name.get(call.name)
        if tool is None:
            record.status, record.result = "error", f"there is no tool named {call.name!r}"
            return record
        record.server = tool.server
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            record.status, record.result = "error", f"the arguments are not a JSON object: {exc}"
            return record
        if self.policy.needs_asking(tool.key):
            decision = await ask(tool, call)
            if decision == Decision.DENY:
                record.status, record.result = "denied", "The user denied this tool call."
                return record
            if decision == Decision.ALWAYS:
                self.policy.always.add(tool.key)
        result = await self.runner.call(tool.server, tool.name, arguments)
        record.status, record.result = ("error" if result.is_error else "ok"), result.text
        return record


NAME_LIMIT = 64  # OpenAI's limit on a function name, which most templates assume


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:NAME_LIMIT] or "tool"


def _exposed_names(tools: list[ToolInfo]) -> dict[str, ToolInfo]:
    """Names the model sees, one per tool, never two alike: the tool's own name made safe
    (letters, digits, ``_`` and ``-``, at most 64), or ``server_tool`` for every tool whose
    safe name another tool shares (``read.file`` and ``read_file`` on two servers), or, where
    that still clashes, a digest of its key. No tool hides another: the later one no longer
    wins, the trusted one no longer drops out of the model's list."""
    own = [_safe_name(t.name) for t in tools]
    shared = Counter(own)
    out: dict[str, ToolInfo] = {}
    for tool, name in zip(tools, own, strict=True):
        if shared[name] > 1:
            name = _safe_name(f"{tool.server}_{tool.name}")
        salt = 0
        while name in out:  # two servers of (nearly) the same name, or a cut past 64
            digest = hashlib.sha256(f"{tool.key}#{salt}".encode()).hexdigest()[:8]
            name, salt = f"{name[: NAME_LIMIT - 9]}_{digest}", salt + 1
        out[name] = tool
    return out


# Keywords whose values are schemas (one, a list of them, or a mapping of names to them).
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


def schema_for_model(schema: dict[str, Any] | None) -> dict[str, Any]:
    """``schema`` without ``title`` keywords, which SDKs generate from class names
    ("get_weatherArguments", "City") and small models copy into the call's name. A property
    named ``title`` stays: only the keyword is dropped, at every level of the schema."""
    if not schema:
        return {"type": "object"}
    return _untitled(schema, depth=0)


def _untitled(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 64:  # deeper: left as it is, never a crash
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    for key in _SUBSCHEMA:
        if key in out:
            out[key] = _untitled(out[key], depth + 1)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_untitled(s, depth + 1) for s in out[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _untitled(s, depth + 1) for name, s in out[key].items()}
    return out
