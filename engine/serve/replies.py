"""The OpenAI wire format's replies for Hearth's local server: response bodies out.

Owns building the JSON of full replies, stream chunks (text, reasoning, tool calls, role,
usage), the model list, and mapping engine outcomes (errors, dropped turns, missing ends) onto
`ApiError`s with HTTP statuses. Request parsing is `engine.serve.schema`; no I/O here.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from engine.errors import (
    ContextOverflowError,
    EngineClosedError,
    EngineError,
    InsufficientMemoryError,
    InvalidImageError,
    InvalidParamsError,
    UnsupportedModelError,
)
from engine.serve.api_error import ApiError
from engine.serve.schema import ApiRequest
from engine.serve.tools_schema import reply_tool_calls
from engine.types import (
    Event,
    Finished,
    FinishReason,
    PromptPrepared,
    Stats,
    TokenLogprob,
    ToolCallDelta,
)

# ---- replies -------------------------------------------------------------------------------


def new_id(chat: bool) -> str:
    return ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]


def finish_reason(reason: FinishReason) -> str:
    if reason in (FinishReason.TOOL_CALLS, FinishReason.CONTENT_FILTER):
        return str(reason)  # OpenAI's own words: "tool_calls", "content_filter"
    return "length" if reason == FinishReason.LENGTH else "stop"


def usage(stats: Stats) -> dict[str, Any]:
    return {
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "total_tokens": stats.prompt_tokens + stats.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": stats.cached_prompt_tokens},
    }


def logprobs_field(req: ApiRequest, entries: list[TokenLogprob]) -> dict[str, Any] | None:
    """OpenAI's ``logprobs`` of a choice for ``entries``; None when the request asked for none.

    Chat: ``{"content": [{token, logprob, bytes, top_logprobs: [...]}]}``. Completions (the
    legacy shape): parallel lists ``tokens``, ``token_logprobs``, ``top_logprobs`` (a dict per
    token) and ``text_offset``.
    """
    if req.generation.logprobs is None:
        return None
    if req.chat:
        return {"content": [_chat_logprob(e) for e in entries]}
    offsets, at = [], 0
    for e in entries:
        offsets.append(at)
        at += len(e.text)
    return {
        "tokens": [e.text for e in entries],
        "token_logprobs": [e.logprob for e in entries],
        "top_logprobs": [dict(e.top) for e in entries],
        "text_offset": offsets,
    }


def _chat_logprob(entry: TokenLogprob) -> dict[str, Any]:
    def one(text: str, logprob: float) -> dict[str, Any]:
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    return {**one(entry.text, entry.logprob), "top_logprobs": [one(t, lp) for t, lp in entry.top]}


def full_reply(
    req: ApiRequest,
    reply_id: str,
    model: str,
    finished: Finished,
    reasoning: str = "",
    logprobs: list[TokenLogprob] | None = None,
) -> dict[str, Any]:
    """The non-streamed body. ``reasoning``: thinking the engine sent apart (gpt-oss's analysis
    channel), as the chat message's ``reasoning_content`` (DeepSeek's and vLLM's field).
    ``logprobs``: the reply's `TokenLogprob`s, when the request asked for them."""
    reason = finish_reason(finished.reason)
    if req.chat:
        message: dict[str, Any] = {"role": "assistant", "content": finished.text}
        if reasoning:
            message["reasoning_content"] = reasoning
        if finished.tool_calls:  # OpenAI: content null when the reply is only calls
            message["content"] = finished.text or None
            message["tool_calls"] = reply_tool_calls(finished.tool_calls)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": reason}
        choice["logprobs"] = logprobs_field(req, logprobs or [])
    else:
        choice = {"index": 0, "text": finished.text, "finish_reason": reason}
        choice["logprobs"] = logprobs_field(req, logprobs or [])
    return {
        "id": reply_id,
        "object": "chat.completion" if req.chat else "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage(finished.stats),
    }


def chunk(
    req: ApiRequest,
    reply_id: str,
    model: str,
    text: str | None,
    reason: str | None = None,
    logprobs: list[TokenLogprob] | None = None,
) -> dict[str, Any]:
    """One streamed chunk: a text delta, or (``text`` None) the final one with a finish reason;
    ``logprobs``: the tokens generated since the last chunk that carried any."""
    if req.chat:
        delta = {} if text is None else {"content": text}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": reason}
    else:
        choice = {"index": 0, "text": text or "", "finish_reason": reason, "logprobs": None}
    if logprobs:
        choice["logprobs"] = logprobs_field(req, logprobs)
    return {
        "id": reply_id,
        "object": "chat.completion.chunk" if req.chat else "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
    }


def reasoning_chunk(req: ApiRequest, reply_id: str, model: str, text: str) -> dict[str, Any]:
    """A chat chunk of thinking sent apart (``delta.reasoning_content``, as DeepSeek and vLLM)."""
    body = chunk(req, reply_id, model, "")
    body["choices"][0]["delta"] = {"reasoning_content": text}
    return body


def tool_call_chunk(
    req: ApiRequest, reply_id: str, model: str, delta: ToolCallDelta
) -> dict[str, Any]:
    """A chat chunk of one call, as OpenAI streams ``delta.tool_calls``: the first piece
    with index, id, type and function name (arguments ""), later ones with arguments."""
    entry: dict[str, Any] = {"index": delta.index}
    if delta.id:
        entry.update(id=delta.id, type="function")
        entry["function"] = {"name": delta.name, "arguments": delta.arguments}
    else:
        entry["function"] = {"arguments": delta.arguments}
    body = chunk(req, reply_id, model, "")
    body["choices"][0]["delta"] = {"tool_calls": [entry]}
    return body


def role_chunk(req: ApiRequest, reply_id: str, model: str) -> dict[str, Any]:
    """The first chat chunk announces the assistant role (clients such as LangChain expect it)."""
    body = chunk(req, reply_id, model, "")
    body["choices"][0]["delta"] = {"role": "assistant", "content": ""}
    return body


def usage_chunk(req: ApiRequest, reply_id: str, model: str, stats: Stats) -> dict[str, Any]:
    body = chunk(req, reply_id, model, None)
    body["choices"] = []
    body["usage"] = usage(stats)
    return body


def models_list(model_id: str, context_window: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {
                "id": model_id,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "hearth",
                "max_model_len": context_window,
            }
        ],
    }


# ---- engine outcomes -> replies -----------------------------------------------------------


def refuse_dropped_turns(first: Event) -> None:
    # The chat window drops the oldest turns to fit (and says so); an API client gets a 400
    # instead, as from vLLM or OpenAI, so no caller is answered about a conversation it did
    # not send. The server cancels the job.
    if isinstance(first, PromptPrepared) and first.dropped_messages:
        raise ApiError(
            400,
            f"the conversation does not fit this model's {first.context_window}-token context "
            f"window with room for the reply ({first.dropped_messages} oldest message(s) would "
            "be dropped): shorten it or lower max_tokens",
            param="messages",
            code="context_length_exceeded",
        )


def require_finished(finished: Finished | None) -> Finished:
    if finished is None:
        raise ApiError(500, "the engine ended without finishing the reply")
    return finished


def with_prompt_counts(finished: Finished, prepared: PromptPrepared | None) -> Finished:
    """Fill prompt counts from `PromptPrepared` when the backend's stats leave them at 0."""
    if prepared is None or finished.stats.prompt_tokens:
        return finished
    stats = dataclasses.replace(
        finished.stats,
        prompt_tokens=prepared.prompt_tokens,
        cached_prompt_tokens=prepared.cached_prompt_tokens,
    )
    return dataclasses.replace(finished, stats=stats)


def api_error(exc: EngineError) -> ApiError:
    if isinstance(exc, ContextOverflowError):
        return ApiError(400, str(exc), param="messages", code="context_length_exceeded")
    if isinstance(exc, InvalidParamsError):
        return ApiError(400, str(exc))
    if isinstance(exc, InvalidImageError | UnsupportedModelError):  # a picture it cannot take
        return ApiError(400, str(exc), param="messages")
    if isinstance(exc, EngineClosedError):
        return ApiError(503, "the engine is shutting down")
    if isinstance(exc, InsufficientMemoryError):  # the batch's K/V would not fit: retry later
        return ApiError(503, str(exc), code="insufficient_memory")
    return ApiError(500, f"the engine failed: {exc}")
