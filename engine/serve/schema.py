"""The OpenAI wire format for Hearth's local server: request bodies in, response bodies out.

Owns validating a ``/v1/chat/completions`` or ``/v1/completions`` JSON body into a
`GenerationRequest` (every bad field becomes an `ApiError` naming it). The JSON of replies,
stream chunks, usage and errors, and engine outcomes mapped onto HTTP statuses, are
`engine.serve.replies`. Does no I/O and knows nothing about sockets or threads;
`engine.serve.server` does. ``image_url`` parts of user turns become the message's images
(`engine.serve.images`: data: URLs decoded here, written to files by the handler).

Defaults follow the OpenAI API, not the app's sliders: temperature 1, top_p 1, and top_k,
min_p and the penalties switched off unless the client sends them (as vLLM does). Which
sampling fields exist, their names and ranges come from `engine.params.PARAMS`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InvalidParamsError
from engine.params import PARAMS
from engine.serve.api_error import ApiError
from engine.serve.images import parse_image_part
from engine.serve.response_format import parse_response_format
from engine.serve.tools_schema import parse_message, parse_tool_fields
from engine.types import (
    MAX_TOP_LOGPROBS,
    GenerationRequest,
    ImageRef,
    Message,
    Role,
    SamplingParams,
)


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """A validated request: what to generate and how to answer."""

    generation: GenerationRequest
    model: str
    stream: bool
    include_usage: bool
    chat: bool  # /v1/chat/completions (True) or /v1/completions (False)
    # Decoded data: URL pictures by sha256, written to files before the request runs.
    images: dict[str, bytes] = field(default_factory=dict)


# JSON field -> its `engine.params` row: the OpenAI name, plus other servers' aliases.
_WIRE_FIELDS = {
    name: param
    for param in PARAMS
    if param.api is not None
    for name in (param.api, *param.wire_aliases, *param.accepted_aliases)
}


_INT_LIMIT = 2**63  # JSON numbers beyond 64 bits mean nothing to any field here


def parse_json(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object: strict JSON (no NaN or Infinity), numbers that fit 64 bits,
    nesting that does not exhaust the parser's recursion (a 400, never a crash)."""
    try:
        body = json.loads(
            raw, parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float
        )
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _bounded_int(text: str) -> int:
    value = int(text)
    if abs(value) >= _INT_LIMIT:
        raise ValueError(f"the number {text[:30]} does not fit in 64 bits")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


def parse_request(body: dict[str, Any], *, chat: bool, default_max_tokens: int = 512) -> ApiRequest:
    """Validate ``body`` (already a JSON object) into an `ApiRequest`; raise `ApiError(400)`."""
    model = body.get("model", "")
    _expect(isinstance(model, str), "model", "a string")
    stream = body.get("stream", False)
    _expect(isinstance(stream, bool), "stream", "true or false")
    options = body.get("stream_options") or {}
    _expect(isinstance(options, dict), "stream_options", "an object")
    n = body.get("n", 1)
    if n != 1:
        raise ApiError(400, f"only n=1 is supported, got {n!r}", param="n")
    images: dict[str, bytes] = {}
    messages = (
        _parse_messages(body.get("messages"), images) if chat else _parse_prompt(body.get("prompt"))
    )
    params = _parse_params(body, default_max_tokens)
    continue_last = bool(body.get("continue_final_message", False)) and chat
    tools, tool_choice, parallel = parse_tool_fields(body) if chat else ((), "auto", True)
    response_format = parse_response_format(body)  # a schema it cannot enforce: 400 here
    thinking = _parse_thinking(body)
    logprobs = _parse_logprobs(body, chat)
    try:
        generation = GenerationRequest(
            messages=messages,
            params=params,
            conversation_id=conversation_key(messages),
            continue_last=continue_last,
            tools=tools,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel,
            response_format=response_format,
            thinking=thinking,
            logprobs=logprobs,
        )
    except InvalidParamsError as exc:
        raise ApiError(400, str(exc)) from None
    return ApiRequest(
        generation=generation,
        model=model,
        stream=stream,
        include_usage=bool(options.get("include_usage", False)),
        chat=chat,
        images=images,
    )


def conversation_key(messages: tuple[Message, ...]) -> str:
    """A stable id for the conversation ``messages`` belong to: a hash of every turn up to and
    including the first user turn. A follow-up request of the same chat repeats that opening,
    so it lands on the engine's parked prefix cache for that chat (API clients send no id)."""
    end = next((i for i, m in enumerate(messages) if m.role == Role.USER), len(messages) - 1)
    opening = json.dumps(
        [[m.role, m.content, [r.sha256 or r.path for r in m.images]] for m in messages[: end + 1]],
        ensure_ascii=False,
    )
    return "api-" + hashlib.sha256(opening.encode()).hexdigest()[:24]


def _parse_logprobs(body: dict[str, Any], chat: bool) -> int | None:
    """How many alternatives to report per token, or None for no log probabilities.

    Chat: ``logprobs`` true, with ``top_logprobs`` 0-20 alternatives (it needs ``logprobs``).
    Completions: ``logprobs`` is itself the count, 0-5, as in OpenAI's legacy API.
    """
    raw, top = body.get("logprobs"), body.get("top_logprobs")
    if not chat:
        if raw is None or raw is False:
            return None
        ok = isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= 5
        _expect(ok, "logprobs", "an integer from 0 to 5")
        return int(raw)
    _expect(raw is None or isinstance(raw, bool), "logprobs", "true or false")
    if top is not None:
        ok = isinstance(top, int) and not isinstance(top, bool) and 0 <= top <= MAX_TOP_LOGPROBS
        _expect(ok, "top_logprobs", f"an integer from 0 to {MAX_TOP_LOGPROBS}")
        _expect(bool(raw), "top_logprobs", "sent with logprobs: true")
    return (int(top) if top is not None else 0) if raw else None


def _parse_thinking(body: dict[str, Any]) -> bool | None:
    """``chat_template_kwargs.enable_thinking`` as vLLM, SGLang and llama.cpp's server take it
    (None: the template's default). Other template keyword arguments are not passed on."""
    kwargs = body.get("chat_template_kwargs")
    if kwargs is None:
        return None
    _expect(isinstance(kwargs, dict), "chat_template_kwargs", "an object")
    value = kwargs.get("enable_thinking")
    _expect(value is None or isinstance(value, bool), "chat_template_kwargs.enable_thinking",
            "true or false")  # fmt: skip
    return bool(value) if value is not None else None


def _parse_messages(raw: Any, images: dict[str, bytes]) -> tuple[Message, ...]:
    _expect(isinstance(raw, list) and len(raw) > 0, "messages", "a non-empty array")
    out = []
    for i, item in enumerate(raw):
        where = f"messages[{i}]"
        _expect(isinstance(item, dict), where, "an object with role and content")
        role = item.get("role")
        role = "system" if role == "developer" else role
        if not isinstance(role, str) or role not in {r.value for r in Role}:
            raise ApiError(
                400,
                f"{where}.role must be system, user, assistant or tool, got {role!r}",
                param=where,
            )
        content = item.get("content")
        if content is None and (role == Role.TOOL or item.get("tool_calls")):
            content = ""  # an assistant turn that only called tools has null content
        refs: list[ImageRef] = []
        message = parse_message(item, role, _content_text(content, where, refs, images), where)
        if refs and role != Role.USER:
            raise ApiError(400, f"{where}: only a user turn can carry images", param=where)
        out.append(dataclasses.replace(message, images=tuple(refs)) if refs else message)
    return tuple(out)


def _content_text(content: Any, where: str, refs: list[ImageRef], images: dict[str, bytes]) -> str:
    """The text of ``content``; its image parts go to ``refs`` (decoded ones to ``images``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "file", ...}]
        texts = []
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "image_url":
                ref, data = parse_image_part(part, f"{where}.content[{i}]")
                refs.append(ref)
                if data is not None:
                    images[ref.sha256] = data
            else:
                texts.append(_part_text(part, f"{where}.content[{i}]"))
        # Documents first, as the app sends them (a stable prefix for the KV cache).
        files = [t for t, is_file in texts if is_file]
        return (
            "\n".join(files)
            + ("\n\n" if files else "")
            + "".join(t for t, is_file in texts if not is_file)
        )
    raise ApiError(400, f"{where}.content must be a string or text parts", param=where)


def _part_text(part: Any, where: str) -> tuple[str, bool]:
    """A content part's text and whether it is a file: "text" parts as they are, OpenAI's
    "file" parts whose ``file_data`` is a text data URL (``data:text/plain;base64,...``) as a
    delimited document; any other part type is refused by name."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return part["text"], False
    if kind == "file" and isinstance(part.get("file"), dict):
        return _file_part(part["file"], where), True
    shown = kind if isinstance(kind, str) else type(part).__name__
    raise ApiError(
        400, f"{where}: content parts of type {shown!r} are not supported (text, text files "
        "and image_url)",
        param=where,
    )  # fmt: skip


def _file_part(file: dict[str, Any], where: str) -> str:
    name = str(file.get("filename") or "file")
    data = file.get("file_data")
    if not isinstance(data, str) or not data.startswith("data:") or "," not in data:
        raise ApiError(400, f"{where}: a file part needs inline file_data (a data: URL); "
                       "file_id uploads are not supported", param=where)  # fmt: skip
    header, _, payload = data[5:].partition(",")
    mime = header.split(";")[0].lower()
    textual = mime.startswith("text/") or mime in ("application/json", "application/xml", "")
    if not textual:
        raise ApiError(400, f"{where}: file {name!r} is {mime}; only text files can be sent "
                       "inline (extract the text first)", param=where)  # fmt: skip
    try:
        raw = base64.b64decode(payload, validate=True) if ";base64" in header else None
        text = raw.decode("utf-8") if raw is not None else urllib.parse.unquote(payload)
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ApiError(
            400, f"{where}: file {name!r} is not UTF-8 text ({exc})", param=where
        ) from exc
    safe = name.replace('"', "'").replace("\n", " ")
    return f'<document name="{safe}">\n{text.strip()}\n</document>'


def _parse_prompt(raw: Any) -> tuple[Message, ...]:
    # The engine is chat-only: a completion prompt becomes one user turn.
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]
    _expect(isinstance(raw, str) and raw != "", "prompt", "a non-empty string")
    return (Message(role="user", content=raw),)


def _parse_params(body: dict[str, Any], default_max_tokens: int) -> SamplingParams:
    """The sampling fields of ``body``; a field left out is switched off (OpenAI's defaults:
    temperature 1, no filter, no penalty). Each value is checked against its `PARAMS` row, so
    the error names the field as the client spelt it."""
    changes: dict[str, Any] = {"max_new_tokens": default_max_tokens}
    for name, param in _WIRE_FIELDS.items():
        value = body.get(name)
        if value is None:
            continue
        if param.kind == "strings":  # "stop": one string or a list; empty strings dropped
            value = [value] if isinstance(value, str) else value
            strings = isinstance(value, list) and all(isinstance(s, str) for s in value)
            _expect(strings, name, "a string or a list of strings")
            value = tuple(s for s in value if s)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = float(value) if param.kind == "float" else value
        if (message := param.error(value, shown=name)) is not None:
            raise ApiError(400, message, param=name)
        changes[param.name] = value
    try:
        return SamplingParams.neutral(**changes)
    except InvalidParamsError as exc:  # a combination no single field refuses
        raise ApiError(400, str(exc), param=str(exc).split(" ", 1)[0]) from None


def _expect(ok: bool, param: str, what: str) -> None:
    if not ok:
        raise ApiError(400, f"{param} must be {what}", param=param)
