"""Reading an OpenAI-compatible endpoint's answers: the SSE stream and the error replies.

Owns turning a streamed chat completion into `TextDelta`s and one `Finished` (malformed data,
a mid-stream error event or a cut connection become ``Finished(ERROR)`` with the partial text
kept and a message naming what was wrong, e.g. ``choices[0].delta must be an object``; unknown
extra fields are ignored, and so is a malformed ``usage`` block: it only loses the figures),
and turning HTTP statuses and transport failures into typed `EngineError`s whose messages say
what to do and never contain the API key. Does not build requests; see
`engine.remote.backend`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from engine.errors import BackendUnavailableError, EngineError, RemoteError
from engine.remote.tools import ToolCallAccumulator
from engine.types import (
    Event,
    Finished,
    FinishReason,
    ReasoningDelta,
    Stats,
    TextDelta,
    ToolCallDelta,
)

_WATCH_S = 0.1  # how often the cancel watcher looks; the reply itself is never delayed


@contextlib.contextmanager
def shutdown_on_cancel(response: httpx.Response, cancel: threading.Event) -> Iterator[None]:
    """While the block runs, a set ``cancel`` shuts the response's socket down.

    Checking ``cancel`` between chunks is not enough: a server busy with a long prefill (or
    stalled) sends nothing, and the read blocks until the timeout. Closing the socket from
    another thread does not wake a blocked recv() on Linux; shutdown() does. ``cancel`` is a
    plain Event the caller sets, so a small thread waits on it.
    """
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if not isinstance(sock, socket.socket):
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if cancel.wait(_WATCH_S):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                return

    threading.Thread(target=watch, name="hearth-remote-cancel", daemon=True).start()
    try:
        yield
    finally:
        done.set()


class StreamReader:
    """Server-sent events of a chat completion stream -> `TextDelta`s and one `Finished`."""

    def __init__(
        self, response: httpx.Response, cancel: threading.Event, started: float, key: str | None
    ) -> None:
        self._response = response
        self._cancel = cancel
        self._started = started
        self._key = key
        self._parts: list[str] = []
        self._count = 0
        self._first: float | None = None
        self._reason: FinishReason | None = None
        self._usage: dict[str, Any] = {}
        self._tools = ToolCallAccumulator()  # the reply's delta.tool_calls

    def events(self) -> Iterator[Event]:
        try:
            for data in self._sse_data():
                if self._cancel.is_set():
                    break
                if data == "[DONE]":
                    yield self._finished(self._reason or FinishReason.STOP)
                    return
                yield from self._consume(data)
        except (httpx.HTTPError, RemoteError) as exc:
            if self._cancel.is_set():  # the cancel watcher broke the connection on purpose
                yield self._finished(FinishReason.CANCELLED)
                return
            message = exc.args[0] if isinstance(exc, RemoteError) else describe_transport(exc)
            yield self._finished(FinishReason.ERROR, error=redact(str(message), self._key))
            return
        finally:
            self._response.close()  # prompt on cancel: the server sees the disconnect
        if self._cancel.is_set():
            yield self._finished(FinishReason.CANCELLED)
        elif self._reason is not None:
            yield self._finished(self._reason)  # some servers omit [DONE]
        else:
            yield self._finished(
                FinishReason.ERROR, error="the stream ended before the reply finished"
            )

    def _sse_data(self) -> Iterator[str]:
        """The ``data:`` payloads, one per event; comments and other fields are skipped."""
        lines: list[str] = []
        for line in self._response.iter_lines():
            if line == "":
                if lines:
                    yield "\n".join(lines)
                    lines = []
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
            if self._cancel.is_set():
                return
        if lines:
            yield "\n".join(lines)

    def _consume(self, data: str) -> Iterator[TextDelta | ReasoningDelta | ToolCallDelta]:
        chunk = _parse_chunk(data)
        if chunk.get("error"):
            raise RemoteError(f"the endpoint failed mid-reply: {error_text(chunk)}")
        if isinstance(chunk.get("usage"), dict):  # anything else there only loses the figures
            self._usage = chunk["usage"]
        choice = _first_choice(chunk)
        if choice is None:
            return
        reason = _field(choice, "finish_reason", str, "a string", "choices[0]")
        if reason:
            self._reason = _REASONS.get(reason, FinishReason.STOP)
        delta = _field(choice, "delta", dict, "an object", "choices[0]") or {}
        # DeepSeek and vLLM send thinking as reasoning_content, OpenRouter/Ollama as reasoning.
        thought = delta.get("reasoning_content") or delta.get("reasoning") or ""
        if isinstance(thought, str) and thought:
            self._count += 1
            self._first = self._first or time.perf_counter()
            yield ReasoningDelta(text=thought, token_index=self._count)
        for entry in _field(delta, "tool_calls", list, "an array", "choices[0].delta") or []:
            self._first = self._first or time.perf_counter()
            yield self._tools.add(entry, self._count)
        text = _field(delta, "content", str, "a string", "choices[0].delta") or _field(
            choice, "text", str, "a string", "choices[0]"
        )
        if not text:
            return
        self._first = self._first or time.perf_counter()
        self._parts.append(text)
        self._count += 1
        yield TextDelta(text=text, token_index=self._count)

    def _finished(self, reason: FinishReason, error: str | None = None) -> Finished:
        text, calls = "".join(self._parts), self._tools.calls()
        return Finished(reason, self._stats(), text, error=error, tool_calls=calls)

    def _stats(self) -> Stats:
        now = time.perf_counter()
        usage = self._usage
        completion = _token_count(usage, "completion_tokens") or self._count
        details = usage.get("prompt_tokens_details")
        decode_s = now - self._first if self._first is not None else 0.0
        return Stats(
            prompt_tokens=_token_count(usage, "prompt_tokens"),
            cached_prompt_tokens=_token_count(details, "cached_tokens"),
            completion_tokens=completion,
            ttft_s=(self._first - self._started) if self._first is not None else 0.0,
            decode_tokens_per_s=(completion - 1) / decode_s
            if decode_s > 0 and completion > 1
            else 0.0,
            total_s=now - self._started,
        )


_REASONS = {
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,  # the API's older name
}


def _parse_chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        chunk = None
    if not isinstance(chunk, dict):
        raise RemoteError(f"the endpoint sent malformed stream data: {data[:80]!r}")
    return chunk


def _first_choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """``choices[0]``; None for a chunk without choices (a usage or keep-alive chunk)."""
    choices = chunk.get("choices")
    if choices is None or choices == []:
        return None
    if not isinstance(choices, list):
        raise _malformed("choices", "an array", choices)
    if not isinstance(choices[0], dict):
        raise _malformed("choices[0]", "an object", choices[0])
    return choices[0]


def _field(obj: dict[str, Any], key: str, kind: type, what: str, where: str) -> Any:
    """``obj[key]`` when it is a ``kind``; None when absent or null; otherwise an error."""
    value = obj.get(key)
    if value is None or isinstance(value, kind):
        return value
    raise _malformed(f"{where}.{key}", what, value)


def _malformed(where: str, what: str, value: Any) -> RemoteError:
    got = {str: "a string", dict: "an object", list: "an array", bool: "a boolean"}.get(
        type(value), "a number"
    )
    return RemoteError(
        f"the endpoint sent a malformed stream chunk: {where} must be {what}, got {got}"
    )


def _token_count(usage: Any, key: str) -> int:
    """A token count from a ``usage`` block; 0 for anything that is not a plausible count."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53:
        return value
    return 0


def raise_for_status(rsp: httpx.Response, url: str, key: str | None, model: str | None) -> None:
    status = rsp.status_code
    if status < 400:
        return
    where = safe_url(url)
    detail = redact(error_text(_json_or_none(rsp)) or rsp.reason_phrase, key)
    if status == 401:
        message = f"{where} rejected the API key (401): check the key saved for this endpoint"
    elif status == 403:
        message = f"{where} refused access (403): the key lacks permission for this model"
    elif status == 404:
        what = f"model {model!r}" if model else "the path"
        message = f"{where} does not know {what} (404): {detail}"
    elif status == 429:
        message = f"{where} is rate limiting (429): wait and retry. {detail}"
    elif status == 400:
        message = f"{where} rejected the request (400): {detail}"
    else:
        message = f"{where} failed with HTTP {status}: {detail}"
    raise RemoteError(message, status=status)


def _json_or_none(rsp: httpx.Response) -> Any:
    try:
        return rsp.json()
    except ValueError:
        return None


def error_text(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or "")[:300]
        return str(err)[:300]
    return ""


def transport_error(exc: httpx.HTTPError, url: str, key: str | None) -> EngineError:
    return BackendUnavailableError(redact(f"{safe_url(url)}: {describe_transport(exc)}", key))


def describe_transport(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or host unreachable: is the server running at this address?"
    if isinstance(exc, httpx.TimeoutException):
        return "the server did not answer in time (timeout)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection broke mid-reply"
    return f"network error ({type(exc).__name__})"


def safe_url(url: str) -> str:
    """``url`` without any ``user:password@`` part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, "", ""))


def redact(text: str, key: str | None) -> str:
    """Remove the key and any token sharing a long head or tail with it (servers echo
    masked keys such as ``sk-abc***xyz``)."""
    if not key:
        return text
    text = text.replace(key, "[key]")
    if len(key) < 12:
        return text

    def scrub(match: re.Match[str]) -> str:
        word = match.group(0)
        return "[key]" if key[:8] in word or key[-4:] in word else word

    return re.sub(r"\S{6,}", scrub, text)
