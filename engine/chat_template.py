"""Rendering a model's chat template as transformers' ``apply_chat_template`` renders it.

Owns the Jinja environment chat templates expect (the one Hugging Face defined and every
template on the Hub is written for) and the steps around the render, so a prompt comes out
byte-identical to transformers' without importing it (~1.5 s and much of torch):

- Jinja's ImmutableSandboxedEnvironment with ``trim_blocks``, ``lstrip_blocks`` and the
  ``loopcontrols`` extension (``break``/``continue``); a ``{% generation %}`` block renders its
  body (transformers tracks assistant spans with it; nothing here needs them);
- globals ``raise_exception(message)`` (a TemplateError), ``strftime_now(format)`` (local time),
  a ``dict`` constructor and a ``namespace`` that refuses underscore names; a ``tojson`` filter
  that is ``json.dumps`` (no HTML escaping; ``indent``, ``separators``, ``sort_keys``,
  ``ensure_ascii`` as keywords);
- the data the template sees rebuilt from plain JSON types; ``None`` fields of messages dropped;
  a message's reasoning copied to ``reasoning_content`` and ``thinking``; the named special tokens
  (``bos_token``, ``eos_token``, ...) passed as variables, overridden by caller keywords;
- ``continue_final_message``: the last message left open, cut just after its text.

Parity with transformers is tested on the families' templates (tests/engine/test_chat_template.py).
Does not own limits on the render (`engine.template_sandbox`), which conversation to render or
the ChatML fallback (`engine.text`), nor tokenizing the result (`engine.tokenizer_runtime`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.utils
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Names a message's reasoning may come under; templates read the first (gpt-oss: "thinking").
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "  # transformers' marker (its exact spelling)


def render_chat(
    template: str,
    conversation: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    documents: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    variables: Mapping[str, Any] | None = None,
) -> str:
    """``conversation`` rendered by ``template`` as transformers renders it. ``variables``: the
    special tokens and any template keywords (``enable_thinking``, ...). Raises TemplateError
    (jinja2) for a template that refuses the conversation, ValueError for bad arguments."""
    if not conversation:
        raise ValueError("Cannot apply chat template to an empty conversation.")
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    chat = _alias_reasoning(_plain([_without_none(m) for m in conversation]))
    final = ""
    if continue_final_message:
        field = continue_final_message if isinstance(continue_final_message, str) else "content"
        final = _tag_final_message(chat, field, template)
    rendered = compile_template(template).render(
        messages=chat,
        tools=_plain(list(tools)) if tools is not None else None,
        documents=_plain(list(documents)) if documents is not None else None,
        add_generation_prompt=add_generation_prompt,
        **_plain(dict(variables or {})),
    )
    return _cut_at_tag(rendered, final) if continue_final_message else rendered


def pick_template(
    chat_template: str | Mapping[str, str] | None, chosen: str | None, tools: object
) -> str:
    """The template to run: ``chosen`` (a template, or the name of one of a model's named
    templates), else the model's ("tool_use" when tools are given, else "default")."""
    if isinstance(chat_template, Mapping):
        if chosen is not None and chosen in chat_template:
            return str(chat_template[chosen])
        if chosen is None:
            if tools is not None and "tool_use" in chat_template:
                return str(chat_template["tool_use"])
            if "default" in chat_template:
                return str(chat_template["default"])
            raise ValueError(
                "this model has several chat templates and none is the default: "
                f"{sorted(chat_template)}"
            )
    if chosen is not None:
        return chosen
    if not isinstance(chat_template, str):
        raise ValueError("the tokenizer has no chat template and none was passed")
    return chat_template


@lru_cache(maxsize=16)
def compile_template(template: str) -> jinja2.Template:
    """The compiled template (cached: compiling a long template takes milliseconds)."""
    return _environment().from_string(template)


class _Generation(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body (transformers records where
    it falls, for training masks; a prompt needs only the text)."""

    tags = {"generation"}  # noqa: RUF012 (Jinja's own class attribute)

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Callable[[], str]) -> str:
        return caller()


class _Namespace(jinja2.utils.Namespace):
    """Jinja's namespace, refusing attribute names that start with "_" (as transformers does:
    no path to CPython internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # Jinja's own signature trick
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)


class _DictConstructor:
    """``dict(...)`` and ``dict.fromkeys(...)`` inside a template, and nothing else of ``dict``."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _check_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise SecurityError(f"chat templates cannot store {name!r} on a namespace")


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=1)
def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals.update(
        raise_exception=_raise_exception,
        strftime_now=_strftime_now,
        dict=_DictConstructor(),
        namespace=_Namespace,
    )
    return env


def _without_none(message: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise TypeError(f"chat messages must be dicts, got {message!r}")
    return {key: value for key, value in message.items() if value is not None}


def _plain(value: Any) -> Any:
    """``value`` rebuilt from plain JSON types (what transformers lets a template see); other
    objects become an inert "<TypeName>" string."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    for kind in (bool, str, int, float):
        if isinstance(value, kind):  # subclasses (enums) lose their methods
            return kind(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return _plain(item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):  # pydantic models (OpenAI's messages)
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _alias_reasoning(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in chat:
        reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def _tag_final_message(chat: list[dict[str, Any]], field: str, template: str) -> str:
    """Append transformers' marker to the last message's ``field`` (and its aliases); return
    the text being continued."""
    final = chat[-1].get(field)
    if final is None:
        raise ValueError(f'continue_final_message is set but the final message has no "{field}"')
    fields = [field]
    if field in REASONING_FIELDS:
        fields = [f for f in REASONING_FIELDS if chat[-1].get(f) == final]
    if not any(f in template for f in fields):
        raise ValueError(f'continue_final_message: the chat template never reads "{field}"')
    if isinstance(final, list | tuple):
        for block in reversed(final):
            if "text" in block:
                final, block["text"] = block["text"], block["text"] + _CONTINUE_TAG
                break
        else:
            raise ValueError("continue_final_message: the final message has no text to continue")
    else:
        for f in fields:
            chat[-1][f] = chat[-1][f] + _CONTINUE_TAG
    return str(final)


def _cut_at_tag(rendered: str, final: str) -> str:
    tag = _CONTINUE_TAG.strip()
    if final.strip() not in rendered or tag not in rendered:
        raise ValueError(
            "continue_final_message is set but the final message does not appear in the chat "
            "after applying the chat template (the template removed part of it)"
        )
    at = rendered.rindex(tag)
    if rendered[at : at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
        return rendered[:at]
    return rendered[:at].rstrip()  # the template trimmed the trailing space
