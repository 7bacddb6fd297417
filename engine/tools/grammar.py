"""Grammar-constrained decoding: JSON, JSON Schema and forced tool calls, enforced per token.

Owns turning a request's ``response_format`` or forced ``tool_choice`` into an llguidance
grammar (`request_grammar`), and `TokenMask`: the matcher that says which token ids may come
next and follows the tokens the sampler picks. The sampler applies the mask first, before any
other filter (`engine.sampling`, step 0); the loop (`engine.generate`) builds the mask with
`token_mask_for` and feeds it every sampled token. Does not own parsing calls out of the reply
(`engine.tools.parse`), the call format of a family (`engine.tools.render.tool_family`) or the
server's wire format (`engine.serve.schema`).

Why llguidance (MIT, one abi3 CPU wheel with no dependencies; the engine behind OpenAI's,
llama.cpp's and vLLM's structured output): measured on this machine with the same JSON schema
and one reply's tokens, median mask cost per token 58 us on the bundled 49k vocabulary and
175 us on Qwen's 151k, against xgrammar's 217 / 658 us (and xgrammar pulls torch, transformers,
triton and pydantic as dependencies) and outlines-core's 15 ms (it lists allowed ids in Python).

JSON is written compactly with ``", "`` and ``": "`` between items (as ``json.dumps``): a
model then cannot loop on whitespace, and every reply the grammar accepts is one JSON value.
"""

from __future__ import annotations

import copy
import json
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from engine.errors import InvalidParamsError
from engine.text import opens_thinking, supports_thinking_toggle
from engine.tools.render import tool_family
from engine.types import GenerationRequest, ResponseFormat, ToolSpec

# llguidance's JSON compiler options: compact JSON, the separators json.dumps writes.
JSON_OPTIONS: dict[str, Any] = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
}
# Families whose forced call is plain JSON (the parsers read a reply that is only the call).
_ARGUMENTS_KEY = {"hermes": "arguments", "gemma3": "arguments", "llama3": "parameters"}
_TAGGED = frozenset({"hermes", "gemma3"})  # <tool_call>…</tool_call> around the JSON

# How a grammar spells a marker (`spell_text`, or `marker_speller`'s token references).
Spell = Callable[[str], str]


def spell_text(marker: str) -> str:
    """``marker`` as text in a grammar: right for a vocabulary without it as a token."""
    return json.dumps(marker)


def marker_speller(tokenizer: Any) -> Spell:
    """How a grammar spells a marker for ``tokenizer``: ``<[id]>`` (the token itself) where the
    vocabulary holds the marker as one added token, else its text.

    llguidance reads every added token as a special token, never as its text, so a grammar
    that spells ``<tool_call>`` as text rejects the one token (151657) a Qwen model writes
    for it: forced calls failed with "token [151657] doesn't satisfy the grammar"."""
    get_added = getattr(tokenizer, "get_added_vocab", None)
    added: dict[str, int] = dict(get_added()) if callable(get_added) else {}

    def spell(marker: str) -> str:
        token = added.get(marker)
        return spell_text(marker) if token is None else f"<[{int(token)}]>"

    return spell


def constrains(request: GenerationRequest) -> bool:
    """Whether ``request`` asks for structured output or a forced call (cheap: builds nothing)."""
    fmt = request.response_format
    forced = bool(request.tools) and request.tool_choice not in ("auto", "none", "")
    return forced or (fmt is not None and fmt.kind != "text")


def request_grammar(
    request: GenerationRequest,
    family: str = "hermes",
    thinking: str = "",
    spell: Spell = spell_text,
) -> str | None:
    """The llguidance grammar ``request`` asks for, or None when decoding is free.

    A forced tool call ("required" or a function's name, with tools offered) wins over
    ``response_format``. InvalidParamsError names the field when a schema cannot be enforced.
    ``thinking`` (`THINKING`): "open" when the prompt opened a ``<think>`` block, so the reply
    first closes it; "optional" when the model may open one itself (Qwen3); "" otherwise.
    ``spell``: how markers are written (`marker_speller` of the model's tokenizer).
    """
    forced = request.tool_choice not in ("auto", "none", "")
    if request.tools and forced:
        return forced_call_grammar(request.tools, request.tool_choice, family, thinking, spell)
    if request.response_format is not None:
        return response_format_grammar(request.response_format, thinking, spell)
    return None


def response_format_grammar(
    fmt: ResponseFormat, thinking: str = "", spell: Spell = spell_text
) -> str | None:
    """The grammar of ``fmt``: any JSON object ("json_object") or the schema ("json_schema")."""
    if fmt.kind == "text":
        return None
    if fmt.kind == "json_object":
        answer = _json_rule({"type": "object"}, lenient=True)
        return _grammar(answer, thinking, field="response_format", spell=spell)
    if fmt.kind != "json_schema":
        raise InvalidParamsError(
            f"response_format.type must be text, json_object or json_schema, got {fmt.kind!r}"
        )
    field = "response_format.json_schema.schema"
    try:
        schema = json.loads(fmt.schema) if fmt.schema else {}
    except ValueError as exc:
        raise InvalidParamsError(f"{field} is not valid JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise InvalidParamsError(f"{field} must be a JSON object, got {type(schema).__name__}")
    answer = _json_rule(schema, lenient=not fmt.strict)
    return _grammar(answer, thinking, field=field, spell=spell)


def forced_call_grammar(
    tools: Sequence[ToolSpec],
    tool_choice: str,
    family: str,
    thinking: str = "",
    spell: Spell = spell_text,
) -> str | None:
    """The grammar of one call, written as ``family`` writes calls, to the function named
    ``tool_choice`` or to any of ``tools`` ("required"). Markers that are tokens of the
    vocabulary are grammar tokens (``spell``): Qwen's ``<tool_call>``, Mistral's
    ``[TOOL_CALLS]``, gpt-oss's channel markers, Gemma 4's call and quote tokens."""
    chosen = [t for t in tools if tool_choice == "required" or t.name == tool_choice]
    if not chosen:
        names = ", ".join(t.name for t in tools)
        raise InvalidParamsError(
            f"tool_choice names the function {tool_choice!r}, which is not in tools ({names})"
        )
    field = "tools[].function.parameters"
    if family == "harmony":
        return _grammar(harmony_call_rules(chosen, spell), "", field=field, spell=spell)
    if family == "gemma4":
        return _grammar(gemma4_call_rules(chosen, spell), thinking, field=field, spell=spell)
    key = _ARGUMENTS_KEY.get(family, "arguments")
    shapes = [_call_schema(t, key) for t in chosen]
    call: dict[str, Any] = shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
    if family == "mistral":  # the parser reads [TOOL_CALLS] and a bare array alike
        call = {"type": "array", "items": call, "minItems": 1, "maxItems": 1}
        head = spell("[TOOL_CALLS]")
        # Mistral writes "[TOOL_CALLS] [{…}]": SentencePiece puts its space after the token
        tagged = f'answer: {head} " "? call\n' if head.startswith("<[") else ""
    elif family in _TAGGED:
        tagged = f'answer: {spell("<tool_call>")} "\\n" call "\\n" {spell("</tool_call>")}\n'
    else:
        tagged = ""
    if not tagged:
        return _grammar(_json_rule(call, lenient=True), thinking, field=field, spell=spell)
    rules = tagged + _json_rule(call, lenient=True, name="call")
    return _grammar(rules, thinking, field=field, spell=spell)


def harmony_call_rules(tools: Sequence[ToolSpec], spell: Spell) -> str:
    """gpt-oss: an optional analysis message, then ``<|channel|>commentary
    to=functions.NAME <|constrain|>json<|message|>`` and the arguments (the turn ends at
    ``<|call|>``, one of its EOS ids). Every marker is a token of its vocabulary."""
    channel, message, end = spell("<|channel|>"), spell("<|message|>"), spell("<|end|>")
    analysis = f'{channel} "analysis" {message} /(.|\\n)*/ {end} {spell("<|start|>")} "assistant"'
    rules = [f'answer: ({analysis})? {channel} "commentary to=functions." call\n']
    names = []
    for i, tool in enumerate(tools):
        names.append(f"call{i}")
        head = json.dumps(f"{tool.name} ")
        rules.append(f'call{i}: {head} {spell("<|constrain|>")} "json" {message} args{i}\n')
        rules.append(_json_rule(_parameters(tool), lenient=True, name=f"args{i}"))
    rules.append(f"call: {' | '.join(names)}\n")
    return "".join(rules)


def gemma4_call_rules(tools: Sequence[ToolSpec], spell: Spell) -> str:
    """Gemma 4: ``<|tool_call>call:NAME{…}<tool_call|>``. Its arguments are Gemma's own
    syntax (`engine.tools.gemma`), not JSON, so they are held to balanced braces with strings
    between ``<|"|>`` tokens; the parser checks the rest."""
    quote = spell('<|"|>')
    names = " | ".join(json.dumps(f"call:{t.name}") for t in tools)
    return (
        f"answer: {spell('<|tool_call>')} ({names}) args {spell('<tool_call|>')}\n"
        f'args: "{{" (ARGTEXT | quoted | args)* "}}"\n'
        f"quoted: {quote} QUOTED? {quote}\n"
        'ARGTEXT: /[^{}"<]+/\n'
        "QUOTED: /(.|\\n)+/\n"
    )


def _parameters(tool: ToolSpec) -> dict[str, Any]:
    try:
        parameters = json.loads(tool.parameters) if tool.parameters else {}
    except ValueError as exc:
        raise InvalidParamsError(
            f"tool {tool.name!r}: parameters is not valid JSON ({exc})"
        ) from None
    if not isinstance(parameters, dict):
        raise InvalidParamsError(f"tool {tool.name!r}: parameters must be a JSON object")
    return parameters or {"type": "object"}


def _call_schema(tool: ToolSpec, key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": tool.name}, key: _parameters(tool)},
        "required": ["name", key],
        "additionalProperties": False,
    }


def _json_rule(schema: dict[str, Any], *, lenient: bool, name: str = "answer") -> str:
    """A Lark rule ``name`` matching JSON valid under ``schema`` (its own x-guidance wins)."""
    own = schema.get("x-guidance")
    options = {**JSON_OPTIONS, "lenient": lenient, **(own if isinstance(own, dict) else {})}
    return f"{name}: %json {json.dumps({**schema, 'x-guidance': options})}\n"


# The reply's start, per thinking mode.
THINKING = {
    "": "start: answer\n",
    "open": "start: think SPACE answer\n",
    "optional": "start: ({think_open} think SPACE)? answer\n",
}


def _think_rules(spell: Spell) -> str:
    """The thinking block's rules. Where ``</think>`` is a token, the block is any text then
    that token (text can never spell a special token); as text, the lazy rule ends the block
    at the first ``</think>``. (llguidance allows no token inside a terminal.)"""
    closing = spell("</think>")
    think = (
        f"think: /(.|\\n)*/ {closing}\n"
        if closing.startswith("<[")
        else f"think[lazy]: /(.|\\n)*/ {closing}\n"
    )
    return think + "SPACE: /[ \\n]*/\n"


def _grammar(answer: str, thinking: str, *, field: str, spell: Spell = spell_text) -> str:
    """The Lark grammar: an optional or required thinking block, then ``answer``'s rules."""
    start = THINKING[thinking].replace("{think_open}", spell("<think>"))
    lark = start + answer + (_think_rules(spell) if thinking else "")
    return _checked(_llg().LLMatcher.grammar_from_lark(lark), field)


def _checked(grammar: str, field: str) -> str:
    """``grammar``, or InvalidParamsError with llguidance's reason (one line)."""
    error = _llg().LLMatcher.validate_grammar(grammar)
    if error:
        reason = " ".join(error.split())[:300]
        raise InvalidParamsError(f"{field} cannot be enforced: {reason}")
    return grammar


class TokenMask:
    """Which token ids may come next under one grammar; follows the sampled tokens.

    EOS ids are allowed exactly when the grammar accepts what was generated, and are the only
    ids allowed once it is complete. Ids past the tokenizer's (padding rows of the output
    layer) are never allowed.
    """

    def __init__(self, matcher: Any, n_tokens: int, eos_ids: Collection[int]) -> None:
        self._matcher = matcher
        self._n_tokens = n_tokens
        self._eos = np.array(sorted(eos_ids), dtype=np.int64)

    @property
    def complete(self) -> bool:
        """The grammar accepts the reply and allows nothing more: the reply is finished."""
        return bool(self._matcher.is_stopped())

    def allowed(self, vocab_size: int) -> np.ndarray:
        """(vocab_size,) bool: the ids that may be sampled next."""
        self._raise_on_error()
        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        n = min(self._n_tokens, vocab_size)
        allowed = np.zeros(vocab_size, dtype=bool)
        allowed[:n] = np.unpackbits(bits, count=n, bitorder="little").view(bool)
        eos = self._eos[self._eos < vocab_size]
        allowed[eos] = bool(self._matcher.is_accepting())
        if not allowed.any():  # a grammar the vocabulary cannot spell from here
            raise RuntimeError("the output grammar allows no token here")
        return allowed

    def advance(self, token: int) -> None:
        """Follow ``token`` (never an EOS id: the loop ends there)."""
        self._matcher.consume_token(token)
        self._raise_on_error()

    def _raise_on_error(self) -> None:
        # RuntimeError: the loop turns it into Finished(ERROR) and keeps the partial text.
        if self._matcher.is_error():
            raise RuntimeError(grammar_error(self._matcher.get_error()))


def grammar_error(detail: str) -> str:
    """llguidance's error as one short line: its first line, never the parser state and the
    grammar that follow it (~40 lines that reached API clients in a 500's body)."""
    first = next((line for line in detail.splitlines() if line.strip()), "unknown error")
    first = "".join(c if c.isprintable() else "?" for c in first).strip()
    return f"the output grammar stopped the reply: {first[:160]}"


def token_mask_for(
    tokenizer: Any, request: GenerationRequest, eos_ids: Collection[int], prompt: str = ""
) -> TokenMask | None:
    """A fresh `TokenMask` for ``request``, or None when it asks for no constraint. A forced
    call is written in the model's own call format (`engine.tools.render.tool_family`). A
    reasoning model thinks first: ``prompt`` (the rendered prompt) ending in ``<think>`` means
    the reply closes that block before the answer; a template with a thinking switch (Qwen3)
    lets the reply open one unless the request turned thinking off."""
    family = tool_family(tokenizer) if request.tools else "hermes"
    if opens_thinking(prompt):
        thinking = "open"
    elif request.thinking is not False and supports_thinking_toggle(tokenizer):
        thinking = "optional"
    else:
        thinking = ""
    grammar = request_grammar(request, family, thinking, marker_speller(tokenizer))
    if grammar is None:
        return None
    llg = _llg()
    matcher = llg.LLMatcher(_ll_tokenizer(tokenizer, eos_ids), grammar, log_level=0)
    return TokenMask(matcher, len(tokenizer), eos_ids)


# The llguidance tokenizer costs ~0.5 s (49k ids) to ~2 s (151k) to build: one per tokenizer,
# kept as long as the tokenizer lives (the engine's, for the model's lifetime).
_TOKENIZERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_TOKENIZERS_LOCK = threading.Lock()


def _ll_tokenizer(tokenizer: Any, eos_ids: Collection[int]) -> Any:
    with _TOKENIZERS_LOCK:
        built = _TOKENIZERS.get(tokenizer)
        if built is None:
            built = _llg().LLTokenizer(
                _tokenizer_json(tokenizer), n_vocab=len(tokenizer), eos_token=sorted(eos_ids)
            )
            _TOKENIZERS[tokenizer] = built
        return built


def _tokenizer_json(tokenizer: Any) -> str:
    """The `tokenizers` JSON of ``tokenizer`` (a transformers fast tokenizer or the engine's
    `engine.tokenizer_runtime.EngineTokenizer`: both hold a ``backend_tokenizer``), as
    ``llguidance.hf.from_tokenizer`` serialises it, without that module's transformers import
    and isinstance check (the fast path runs without transformers)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:  # a slow (Python) tokenizer
        raise InvalidParamsError(
            f"structured output needs a fast tokenizer, not {type(tokenizer).__name__}"
        )
    backend = copy.copy(backend)  # padding and truncation off on a copy, as llguidance does
    backend.no_padding()
    backend.no_truncation()
    return str(backend.to_str())


def _llg() -> Any:
    import llguidance

    return llguidance
