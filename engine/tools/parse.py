"""Tool calls out of a streamed reply, per model family, without ever showing a partial one.

Owns `ToolCallParser`: decoded text in, in any chunking (a marker may be split anywhere),
plain text and complete `ParsedCall`s out, in order. Text that could still become a call
marker is held back; a call is released only once it is complete and parsed. A call inside a
``<think>`` block is thinking, not a call. A call whose body does not parse (malformed JSON,
an unknown shape) comes back as the text it was, markers included: never a crash, never lost.

Families (`FAMILIES`) and what each model writes:
- ``hermes`` (Qwen 2.5/3, Hermes, and the fallback for templates without tools):
  ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``, several in a row; Qwen3-Coder and
  Qwen3.5 write ``<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>``.
- ``llama3``: ``<|python_tag|>{"name": …, "parameters": {…}}`` or a reply that is only that
  JSON (several separated by ``;``).
- ``mistral``: ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (v3) or
  ``[TOOL_CALLS]name[ARGS]{…}`` (v11+); also a reply that is only the JSON array.
- ``gemma4``: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>``.
- ``gemma3`` (no native format): fenced ``tool_code``/``tool_call``/``json`` blocks holding
  the JSON above or Python-style ``name(a=1)`` calls, and Hermes tags.
gpt-oss (harmony) calls travel in its ``commentary`` channel: `engine.harmony` reads those.

Given the offered tools' ``names``, the text families also take a call written without their
markers, as small models often write one (Qwen2.5 0.5B did, 3 times of 3): a reply that is a
bare JSON object, or a fenced ``json`` block, naming an offered tool is a call, as llama.cpp's
parsers take it. Anything else in that shape (an answer that is JSON, another name) stays
text.
Does not own ids, events or rendering prompts (`engine.tools.stream`, `engine.tools.render`).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.markers import first_marker, partial_marker_len
from engine.tools.gemma import gemma_args_to_json

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# Markers that only ever open a call (unlike Gemma 3's code fences, which open answers too).
EXPLICIT_MARKERS = frozenset({"<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<|tool_call>"})


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One complete call: the function's name and its arguments as JSON text of an object."""

    name: str
    arguments: str


Item = str | ParsedCall


@dataclass(frozen=True, slots=True)
class Family:
    """How one family writes calls: each opening marker and its closing one (None: the call
    runs to the end of the reply), and the first character of a reply that is a bare call."""

    name: str
    pairs: tuple[tuple[str, str | None], ...]
    bare: str = ""


FAMILIES = {
    "hermes": Family("hermes", (("<tool_call>", "</tool_call>"),)),
    "llama3": Family("llama3", (("<|python_tag|>", None),), bare="{"),
    "mistral": Family("mistral", (("[TOOL_CALLS]", None),), bare="["),
    "gemma4": Family("gemma4", (("<|tool_call>", "<tool_call|>"),)),
    # gpt-oss: calls come apart in harmony's commentary channel (engine.harmony), not in text.
    "harmony": Family("harmony", ()),
    "gemma3": Family(
        "gemma3",
        (
            ("```tool_code", "```"),
            ("```tool_call", "```"),
            ("```json", "```"),
            ("<tool_call>", "</tool_call>"),
        ),
    ),
}


# Families whose calls are JSON text, and the fence an unmarked call may come in.
_UNMARKED_FAMILIES = frozenset({"hermes", "llama3", "mistral", "gemma3"})
_FENCE = ("```json", "```")


class _Mode(StrEnum):
    TEXT = "text"
    CALL = "call"  # inside a marked call, waiting for its closing marker
    BARE = "bare"  # the reply is a bare call (llama3/mistral): read to its end


class ToolCallParser:
    """Incremental split of one reply into text and calls (see the module docstring).

    ``feed`` returns what is certain now; ``finish`` the rest. ``text`` holds every text
    piece released so far and ``calls`` every call, in order.
    """

    def __init__(
        self, family: str, *, in_think: bool = False, names: frozenset[str] = frozenset()
    ) -> None:
        self.family = FAMILIES[family]
        # Offered names: unmarked calls (a bare object, a fenced json block) count too.
        self._names = names if family in _UNMARKED_FAMILIES else frozenset()
        self._bare = self.family.bare or ("{" if self._names else "")
        self._pairs = dict(self.family.pairs)
        if self._names and _FENCE[0] not in self._pairs:
            self._pairs[_FENCE[0]] = _FENCE[1]
        self._implicit = False  # the open call has no marker of the family's own
        self.text = ""
        self.calls: list[ParsedCall] = []
        self._held = ""
        self._mode = _Mode.TEXT
        self._in_think = in_think
        self._at_start = True  # nothing but whitespace released since the start / </think>
        self._open = ""
        self._close: str | None = None
        self._markers = (*self._pairs, THINK_OPEN)

    def feed(self, text: str) -> list[Item]:
        self._held += text
        out: list[Item] = []
        while self._held:
            before = (self._mode, self._in_think, len(self._held))
            self._step(out)
            if (self._mode, self._in_think, len(self._held)) == before:
                break  # waiting for more text
        return out

    def finish(self, *, cut: bool = False) -> list[Item]:
        """The reply ended: an open call is parsed as it stands, or released as text.

        ``cut``: the reply was cut short (length, cancel, error). A call opened by an explicit
        marker that does not parse then is a partial call: it is dropped, never shown.
        """
        out: list[Item] = []
        held, self._held = self._held, ""
        if self._mode == _Mode.TEXT:
            self._release(out, held)
        elif self._mode == _Mode.BARE:
            self._close_call(out, held, raw=held)
        elif cut and self._open in EXPLICIT_MARKERS:
            self._close_call(out, held, raw="")
        else:
            self._close_call(out, held, raw=self._open + held)
        self._mode = _Mode.TEXT
        return out

    def _step(self, out: list[Item]) -> None:
        if self._mode == _Mode.CALL:
            self._step_call(out)
        elif self._mode == _Mode.TEXT and self._in_think:
            self._step_think(out)
        elif self._mode == _Mode.TEXT:
            self._step_text(out)
        # BARE: everything waits for finish()

    def _step_think(self, out: list[Item]) -> None:
        at = self._held.find(THINK_CLOSE)
        if at < 0:
            keep = partial_marker_len(self._held, (THINK_CLOSE,))
            self._release(out, self._held[: len(self._held) - keep])
            self._held = self._held[len(self._held) - keep :]
            return
        end = at + len(THINK_CLOSE)
        self._release(out, self._held[:end])
        self._held, self._in_think, self._at_start = self._held[end:], False, True

    def _step_text(self, out: list[Item]) -> None:
        held = self._held
        if self._at_start and self._bare:
            stripped = held.lstrip()
            if not stripped or any(m.startswith(stripped) for m in self._markers):
                return  # whitespace or a marker's beginning so far: nothing decided yet
            marked = any(stripped.startswith(m) for m in self._markers)
            if not marked and stripped.startswith(self._bare):
                self._mode = _Mode.BARE
                self._implicit = not self.family.bare
                return
        at, marker = first_marker(held, self._markers)
        if marker is None:
            keep = partial_marker_len(held, self._markers)
            self._release(out, held[: len(held) - keep])
            self._held = held[len(held) - keep :]
            return
        self._release(out, held[:at])
        self._held = held[at + len(marker) :]
        if marker == THINK_OPEN:
            self._release(out, marker)
            self._in_think = True
            return
        self._mode, self._open = _Mode.CALL, marker
        self._close = self._pairs[marker]
        self._implicit = marker not in dict(self.family.pairs)

    def _step_call(self, out: list[Item]) -> None:
        if self._close is None:
            return  # runs to the end of the reply
        at = self._held.find(self._close)
        if at < 0:
            return
        body, self._held = self._held[:at], self._held[at + len(self._close) :]
        self._close_call(out, body, raw=self._open + body + self._close)
        self._mode = _Mode.TEXT

    def _close_call(self, out: list[Item], body: str, *, raw: str) -> None:
        calls = parse_calls(self.family.name, self._open, body)
        if self._implicit and not all(c.name in self._names for c in calls):
            calls = []  # unmarked JSON that names no offered tool is an answer, not a call
        self._implicit = False
        if not calls:
            self._release(out, raw)  # not a call after all: the text it was
            return
        self.calls.extend(calls)
        out.extend(calls)
        self._at_start = False

    def _release(self, out: list[Item], text: str) -> None:
        if not text:
            return
        self.text += text
        if text.strip():
            self._at_start = False
        if out and isinstance(out[-1], str):
            out[-1] += text
        else:
            out.append(text)


def parse_calls(family: str, opened: str, body: str) -> list[ParsedCall]:
    """The calls in one call's ``body`` (after marker ``opened``); [] when it is not one."""
    try:
        if family == "gemma4":
            return _gemma4_calls(body)
        if family == "mistral" and "[ARGS]" in body:
            return _mistral_v11_calls(body)
        if family == "hermes" and "<function=" in body:
            return _xml_calls(body)
        calls = _json_calls(body)
    except (ValueError, RecursionError, TypeError):
        calls = []
    if calls or family != "gemma3" or opened != "```tool_code":
        return calls
    try:
        return _python_calls(body)
    except (ValueError, SyntaxError, RecursionError, TypeError):
        return []


def _json_calls(body: str) -> list[ParsedCall]:
    """Calls from one or more JSON values (objects, or arrays of them), separated by
    whitespace, ``;`` or ``,``."""
    decoder, at = json.JSONDecoder(), 0
    values: list[Any] = []
    body = body.strip()
    while at < len(body):
        if body.startswith(("<|", "</s>"), at) and values:
            break  # an end-of-turn marker the decoder kept (<|eom_id|>): the calls are done
        value, at = decoder.raw_decode(body, at)
        values.extend(value if isinstance(value, list) else [value])
        while at < len(body) and body[at] in " \t\r\n;,":
            at += 1
    calls = [_call_of(v) for v in values]
    return [c for c in calls if c is not None] if all(calls) else []


def _call_of(value: Any) -> ParsedCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        value = value["function"]
    name = value.get("name")
    args: Any = next((value[k] for k in ("arguments", "parameters", "args") if k in value), {})
    if isinstance(args, str):
        args = json.loads(args) if args.strip() else {}
    if not isinstance(name, str) or not name or not isinstance(args, dict):
        return None
    return ParsedCall(name, json.dumps(args, ensure_ascii=False))


_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)</function>", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.DOTALL)


def _xml_calls(body: str) -> list[ParsedCall]:
    """Qwen3-Coder / Qwen3.5's ``<function=NAME><parameter=K>V</parameter></function>``;
    a value that is JSON (a number, a list) is read as such, anything else is a string."""
    calls = []
    for name, inner in _XML_FUNCTION.findall(body):
        args: dict[str, Any] = {}
        for key, value in _XML_PARAMETER.findall(inner):
            try:
                args[key] = json.loads(value)
            except ValueError:
                args[key] = value
        calls.append(ParsedCall(name, json.dumps(args, ensure_ascii=False)))
    return calls


def _mistral_v11_calls(body: str) -> list[ParsedCall]:
    calls = []
    for part in body.split("[TOOL_CALLS]"):
        if not part.strip():
            continue
        name, _, args = part.partition("[ARGS]")
        parsed = json.loads(args)
        if not name.strip() or not isinstance(parsed, dict):
            return []
        calls.append(ParsedCall(name.strip(), json.dumps(parsed, ensure_ascii=False)))
    return calls


def _gemma4_calls(body: str) -> list[ParsedCall]:
    body = body.strip()
    if not body.startswith("call:") or "{" not in body:
        return []
    name, brace, rest = body[len("call:") :].partition("{")
    args = json.loads(gemma_args_to_json(brace + rest))
    if not name.strip() or not isinstance(args, dict):
        return []
    return [ParsedCall(name.strip(), json.dumps(args, ensure_ascii=False))]


def _python_calls(body: str) -> list[ParsedCall]:
    """``name(a=1, b="x")`` calls, one per line or in a list (Gemma 3's ``tool_code``)."""
    tree = ast.parse(body.strip(), mode="exec")
    nodes: list[ast.expr] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Expr):
            return []
        value = statement.value
        nodes.extend(value.elts if isinstance(value, ast.List) else [value])
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            return []
        args: dict[str, Any] = {
            k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None
        }
        calls.append(ParsedCall(node.func.id, json.dumps(args, ensure_ascii=False)))
    return calls
