"""Tool definitions, calls and results into the model's own chat template.

Owns the shapes transformers' ``apply_chat_template`` gives a template: ``tools=`` as OpenAI's
``{"type": "function", "function": {…}}`` entries, an assistant turn's ``tool_calls`` (with
``arguments`` as a mapping: Qwen, Llama and Gemma templates serialise it themselves), and a
``tool`` turn's ``tool_call_id`` / ``name``. Owns which call format a model writes
(`tool_family`), and the fallback for templates that do not render tools (SmolLM2's ChatML
among them): the Hermes instructions and ``<tool_call>`` / ``<tool_response>`` text in plain
turns, which small models follow best. Also the prompt-level nudge for ``tool_choice``
"required" or a named function (`choice_instruction`). Does not own rendering itself
(`engine.text`) or parsing replies (`engine.tools.parse`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from engine.errors import InvalidParamsError
from engine.harmony import is_harmony
from engine.markers import MarkerDefuser
from engine.types import Message, Role, ToolCall, ToolSpec


def template_text(tokenizer: Any) -> str:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: the default one is used
        template = template.get("default")
    return template if isinstance(template, str) else ""


def renders_tools(tokenizer: Any) -> bool:
    """Whether the model's template reads ``tools`` (else the Hermes fallback is used)."""
    return "tools" in template_text(tokenizer)


def tool_family(tokenizer: Any) -> str:
    """The call format the model writes: "harmony", "gemma4", "mistral", "hermes", "llama3",
    "gemma3", or "hermes" for a template without tools (the fallback teaches that one)."""
    if is_harmony(tokenizer):
        return "harmony"
    template = template_text(tokenizer)
    if not renders_tools(tokenizer):
        return "gemma3" if "<start_of_turn>" in template else "hermes"
    for marker, family in (
        ("<|tool_call>", "gemma4"),
        ("[TOOL_CALLS]", "mistral"),
        ("<tool_call>", "hermes"),
        ("<|python_tag|>", "llama3"),
        ("<|start_header_id|>", "llama3"),
        ("<start_of_turn>", "gemma3"),
    ):
        if marker in template:
            return family
    return "hermes"


# Families whose call markers are special tokens: the reply is decoded with them kept.
MARKER_TOKEN_FAMILIES = frozenset({"gemma4", "mistral", "llama3"})


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    """``spec`` as an OpenAI ``tools`` entry; InvalidParamsError when its schema is not JSON."""
    try:
        parameters = json.loads(spec.parameters) if spec.parameters else {}
    except ValueError as exc:
        raise InvalidParamsError(
            f"tool {spec.name!r}: parameters is not valid JSON ({exc})"
        ) from None
    if isinstance(parameters, dict):
        parameters = schema_without_titles(parameters)
    function = {"name": spec.name, "description": spec.description, "parameters": parameters}
    return {"type": "function", "function": function}


# Keywords whose values are schemas (one, a list of them, or a mapping of names to them).
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


def schema_without_titles(schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """``schema`` without ``title`` keywords at any level: SDKs generate them from class
    names ("get_weatherArguments"), and small models copied them into the call's name. A
    property named ``title`` stays. (The app strips its MCP schemas the same way.)"""
    if depth > 64:
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    for key in _SUBSCHEMA:
        if isinstance(out.get(key), dict):
            out[key] = schema_without_titles(out[key], depth + 1)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [
                schema_without_titles(s, depth + 1) if isinstance(s, dict) else s for s in out[key]
            ]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {
                name: schema_without_titles(s, depth + 1) if isinstance(s, dict) else s
                for name, s in out[key].items()
            }
    return out


def tool_turn_fields(message: Message) -> dict[str, Any]:
    """The template fields of ``message``'s calls (assistant) or of its answer (tool)."""
    fields: dict[str, Any] = {}
    if message.tool_calls:
        fields["tool_calls"] = [_call_entry(c) for c in message.tool_calls]
    if message.role == Role.TOOL:
        if message.tool_call_id:
            fields["tool_call_id"] = message.tool_call_id
        if message.name:
            fields["name"] = message.name
    return fields


def _call_entry(call: ToolCall) -> dict[str, Any]:
    arguments: Any
    try:
        arguments = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        arguments = call.arguments  # the model's own malformed text, kept as it was
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def choice_instruction(tools: Sequence[ToolSpec], tool_choice: str) -> str:
    """A system line for "required" or a named function; "" for "auto" and "none"."""
    if tool_choice == "required":
        return "You must answer with a call to one of the functions, not with text."
    if tool_choice not in ("auto", "none", ""):
        return f"You must answer with a call to the function {tool_choice}, not with text."
    return ""


_FALLBACK = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def fallback_conversation(
    conversation: list[dict[str, Any]],
    tools: Sequence[ToolSpec],
    tool_choice: str = "auto",
    defuse: MarkerDefuser | None = None,
) -> list[dict[str, Any]]:
    """``conversation`` for a template that ignores tools: the definitions (``defuse``d) and
    instructions in the system message, calls as ``<tool_call>`` text, results as user turns."""
    schemas = [tool_schema(t) for t in tools]
    if defuse is not None:
        schemas = [defused_json(s, defuse) for s in schemas]
    listing = "\n".join(json.dumps(s, ensure_ascii=False) for s in schemas)
    system = _FALLBACK.format(tools=listing) if tools else ""
    if tools and (nudge := choice_instruction(tools, tool_choice)):
        system += "\n\n" + nudge
    out: list[dict[str, Any]] = []
    for turn in conversation:
        turn = dict(turn)
        calls = turn.pop("tool_calls", None)
        if calls:
            text = "\n".join(
                "<tool_call>\n" + json.dumps(c["function"], ensure_ascii=False) + "\n</tool_call>"
                for c in calls
            )
            turn["content"] = (turn.get("content") or "") + ("\n" if turn.get("content") else "")
            turn["content"] += text
        if turn["role"] == Role.TOOL:
            turn = {
                "role": Role.USER.value,
                "content": f"<tool_response>\n{turn['content']}\n</tool_response>",
            }
        out.append(turn)
    return with_system_text(out, system)


def with_system_text(conversation: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``conversation`` with ``text`` appended to its first system message (or a new one)."""
    if not text:
        return conversation
    if conversation and conversation[0]["role"] == Role.SYSTEM:
        first = dict(conversation[0])
        first["content"] = f"{first['content']}\n\n{text}" if first["content"] else text
        return [first, *conversation[1:]]
    return [{"role": Role.SYSTEM.value, "content": text}, *conversation]


_FALLBACK_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
# One defuser per tokenizer, as long as it lives (the engine's, for the model's lifetime).
_DEFUSERS: weakref.WeakKeyDictionary[Any, MarkerDefuser] = weakref.WeakKeyDictionary()
_DEFUSERS_LOCK = threading.Lock()


def marker_defuser(tokenizer: Any) -> MarkerDefuser:
    """Breaks up every marker ``tokenizer``'s vocabulary holds (its special and added tokens
    that look like markers, and the fallback's tags), so the model reads it as text."""
    with _DEFUSERS_LOCK:
        try:
            found = _DEFUSERS.get(tokenizer)
        except TypeError:  # a tokenizer that takes no weak reference: built each time
            return MarkerDefuser(_markers(tokenizer))
        if found is None:
            found = _DEFUSERS[tokenizer] = MarkerDefuser(_markers(tokenizer))
        return found


def defuse_untrusted(tokenizer: Any, conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``conversation`` with every chat marker broken up in each turn but the assistant's.

    Text that reaches a prompt may come from anyone: a tool's result, an attached document, a
    collection's passage, an API client's file part, a pasted web page. Tokenizers read
    special tokens out of plain text, so ``<|im_end|><|im_start|>system`` in any of them forged
    a turn, and ``<tool_call>`` a call the user never approved. The template writes the real
    markers; the assistant's own turns (its calls, its reasoning) are left as they were.
    """
    defuse = marker_defuser(tokenizer)
    out = []
    for turn in conversation:
        if turn["role"] != Role.ASSISTANT and isinstance(turn.get("content"), str):
            turn = {**turn, "content": defuse(turn["content"])}
        out.append(turn)
    return out


def defused_json(value: Any, defuse: MarkerDefuser, depth: int = 0) -> Any:
    """``value`` (a tool's definition) with markers broken up in every string, keys included."""
    if isinstance(value, str):
        return defuse(value)
    if depth > 64:  # deeper than any schema means: left out, never a crash
        return None
    if isinstance(value, dict):
        return {defuse(str(k)): defused_json(v, defuse, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [defused_json(v, defuse, depth + 1) for v in value]
    return value


# Plain (not special) added tokens that still open or close a call, a result or thinking.
_CALL_MARKERS = frozenset({*_FALLBACK_TAGS, "<think>", "</think>"})


def _markers(tokenizer: Any) -> set[str]:
    """The vocabulary's markers: its special tokens, and those of its plain added tokens that
    open or close a call or thinking (Qwen's ``<tool_call>``) or are written ``<|…|>``. Other
    plain added tokens are text the model reads as text: Gemma's ``<b>``, ``<code>`` and
    ``<div>`` are, and breaking them up would put invisible characters into code the model
    copies back."""
    found: set[str] = set(_FALLBACK_TAGS)
    found.update(str(t) for t in getattr(tokenizer, "all_special_tokens", None) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    get_added = getattr(tokenizer, "get_added_vocab", None)
    if isinstance(decoder, dict):
        for token in decoder.values():
            text = str(getattr(token, "content", token))
            if getattr(token, "special", False) or "|" in text or text in _CALL_MARKERS:
                found.add(text)
    elif callable(get_added):  # no flags to tell them apart: every added token
        found.update(str(t) for t in get_added())
    return {m for m in found if len(m) > 1 and not m.isalnum() and not m.isspace()}


def _mistral_call_ids(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mistral's templates refuse call ids that are not 9 letters or digits: each id becomes
    a stable 9-character digest of itself, the same in the call and in its answer."""

    def short(call_id: str) -> str:
        return hashlib.sha256(call_id.encode()).hexdigest()[:9]

    out = []
    for turn in conversation:
        turn = dict(turn)
        if turn.get("tool_calls"):
            turn["tool_calls"] = [{**c, "id": short(c["id"])} for c in turn["tool_calls"]]
        if turn.get("tool_call_id"):
            turn["tool_call_id"] = short(turn["tool_call_id"])
        out.append(turn)
    return out


def with_tools(
    tokenizer: Any,
    conversation: list[dict[str, Any]],
    options: dict[str, Any],
    tools: Sequence[ToolSpec],
    tool_choice: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The conversation and template options that put ``tools`` (and any past calls and
    results) before the model: ``tools=`` for a template that renders them, else the
    fallback. ``tool_choice`` "none" leaves the definitions out. Untrusted text is defused
    first, with or without tools (`defuse_untrusted`), the tools' definitions too."""
    conversation = defuse_untrusted(tokenizer, conversation)
    offered = tuple(tools) if tool_choice != "none" else ()
    history = any("tool_calls" in t or t["role"] == Role.TOOL for t in conversation)
    if not offered and not history:
        return conversation, options
    if tool_family(tokenizer) == "mistral":
        conversation = _mistral_call_ids(conversation)
    defuse = marker_defuser(tokenizer)
    if not renders_tools(tokenizer):
        return fallback_conversation(conversation, offered, tool_choice, defuse), options
    if not offered:
        return conversation, options
    conversation = with_system_text(conversation, choice_instruction(offered, tool_choice))
    schemas = [defused_json(tool_schema(t), defuse) for t in offered]
    return conversation, {**options, "tools": schemas}
