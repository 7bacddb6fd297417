"""One HTTP request to Hearth's local server: `RequestHandler`, routing, the guard, and the reply.

Owns what a handler thread of `engine.serve.server` does with a connection: route
``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions``, ``POST /v1/completions``
and ``POST /v1/moderations`` (`engine.serve.moderations`, on the engine thread), pass
`engine.serve.guard` (loopback caller, key, JSON body of a bounded size, a prompt that fits)
before the body is read, hand the generation to the engine worker and write the reply whole or
as server-sent events, cancelling the generation when the client hangs up (running or still
queued). Does not own the sockets, the connection cap or starting and stopping
(`engine.serve.server`), nor the wire format (`engine.serve.schema`, `engine.serve.replies`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import queue
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from engine.errors import EngineError
from engine.serve import guard, moderations, replies, schema
from engine.serve.api_error import ApiError
from engine.serve.images import store_images
from engine.serve.worker import END, Job, client_key
from engine.types import (
    Event,
    Finished,
    FinishReason,
    PromptPrepared,
    ReasoningDelta,
    TextDelta,
    TokenLogprob,
    ToolCallDelta,
)

if TYPE_CHECKING:
    from engine.serve.server import _Server

log = logging.getLogger("engine.serve.server")  # the server's log, as before the split

MAX_BODY_BYTES = 32 * 1024 * 1024  # pictures come inline (data: URLs of up to 20 MB)
_POLL_S = 0.2  # how often a waiting handler checks whether its client hung up


class RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: the openai client reuses connections
    timeout = 300  # drop idle keep-alive connections eventually

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    # ---- routing ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._guard(self._route_get)

    def do_POST(self) -> None:
        self._guard(self._route_post)

    def _not_allowed(self) -> None:
        self.close_connection = True  # any body is left unread
        self._send_json(405, ApiError(405, f"use GET or POST, not {self.command}").body())

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed  # unknown methods get a 501

    def _route_get(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        guard.check_caller(self.headers, self.server.allow_remote)
        if path == "/health":
            return self._send_json(200, {"status": "ok"})
        guard.check_key(self.headers, self.server.api_key)
        if path in ("/v1/models", "/models"):
            info = self.server.worker.backend.info
            return self._send_json(
                200, replies.models_list(self.server.model_id, info.context_window)
            )
        raise ApiError(404, f"no route GET {path}", code="not_found")

    def _route_post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        # Until the body is read the connection is out of step for keep-alive: close it on
        # any refusal. Nothing is read from a caller that is not let in.
        keep_alive_choice, self.close_connection = self.close_connection, True
        guard.check_caller(self.headers, self.server.allow_remote)
        guard.check_key(self.headers, self.server.api_key)
        if path not in ("/v1/chat/completions", "/v1/completions", "/v1/moderations"):
            raise ApiError(404, f"no route POST {path}", code="not_found")
        body = self._read_body(guard.check_json_body(self.headers, MAX_BODY_BYTES))
        self.close_connection = keep_alive_choice
        if path == "/v1/moderations":
            return self._moderate(schema.parse_json(body))
        request = schema.parse_request(
            schema.parse_json(body), chat=path.endswith("chat/completions")
        )
        guard.check_prompt_size(request.generation.messages, self.server.context_window)
        if request.images or any(m.images for m in request.generation.messages):
            request = _with_stored_images(request, self.server.allow_image_urls)
        if request.model not in self.server.aliases:
            raise ApiError(
                404,
                f"model {request.model!r} is not served here; use {self.server.model_id!r}",
                param="model",
                code="model_not_found",
            )
        self._complete(request)

    def _moderate(self, body: object) -> None:
        review = self.server.review
        if review is None:
            raise ApiError(
                404,
                "this server has no safety review: start it with --guard-model or --blocklist",
                code="not_found",
            )
        texts = moderations.parse_inputs(body)
        try:
            answer = self.server.worker.call(
                lambda: moderations.moderate(review, texts, self.server.model_id)
            )
        except EngineError as exc:  # a required guard that is down
            raise replies.api_error(exc) from None
        self._send_json(200, answer)

    def _guard(self, route: Any) -> None:
        """Run a route; turn every failure into an OpenAI-style error reply."""
        try:
            route()
        except ApiError as exc:
            self._send_json(exc.status, exc.body())
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        except Exception:
            log.exception("request failed")
            self._send_json(500, ApiError(500, "internal server error").body())

    def _read_body(self, size: int) -> bytes:
        body = self.rfile.read(size)
        if len(body) < size:  # the client sent less than it announced, then hung up
            raise ConnectionResetError("the client closed the connection mid-body")
        return body

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib's own refusals (a bad request line, headers too long, an unknown method)
        as OpenAI-style JSON, like every other error here, instead of an HTML page."""
        self.close_connection = True
        text = message or self.responses.get(code, ("error",))[0]
        self.log_error("code %d, message %s", code, text)
        self._send_json(code, ApiError(code, text).body())

    # ---- generation -------------------------------------------------------------------------

    def _complete(self, request: schema.ApiRequest) -> None:
        client = client_key(self.client_address[0], self.headers.get("Authorization"))
        job = self.server.worker.submit(request, client)
        try:
            events = self._events(job)
            first = next(events, None)  # errors before any text still get a proper status
            if first is None:  # cancelled before it started (the server is stopping)
                raise ApiError(503, "the request was cancelled before it started")
            replies.refuse_dropped_turns(first)
            if request.stream:
                self._stream(request, first, events)
            else:
                self._reply_whole(request, first, events)
        except (BrokenPipeError, ConnectionResetError):
            job.cancel.set()
            self.close_connection = True
        except EngineError as exc:
            raise replies.api_error(exc) from None
        finally:
            job.cancel.set()  # no-op once the job ended; stops it if the handler failed

    def _events(self, job: Job) -> Iterator[Event]:
        """The job's events as the worker produces them; cancels the job if the client leaves.

        The check runs at every poll and every event: a non-streamed reply writes nothing
        until the end, so a busy queue must not hide a client that hung up.
        """
        while True:
            try:
                item: object = job.events.get(timeout=_POLL_S)
            except queue.Empty:
                item = None
            if _client_gone(self.connection):
                job.cancel.set()
                raise ConnectionResetError("client disconnected")
            if item is None:
                continue
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]

    def _reply_whole(self, request: schema.ApiRequest, first: Event, rest: Iterator[Event]) -> None:
        prepared, finished, reasoning = None, None, []
        logprobs: list[TokenLogprob] = []
        for event in _chain(first, rest):
            if isinstance(event, PromptPrepared):
                prepared = event
            elif isinstance(event, TokenLogprob):
                logprobs.append(event)
            elif isinstance(event, ReasoningDelta):
                reasoning.append(event.text)
            elif isinstance(event, Finished):
                finished = event
        finished = replies.with_prompt_counts(replies.require_finished(finished), prepared)
        if finished.reason == FinishReason.ERROR:
            raise ApiError(500, failure_message(finished.error))
        reply_id = replies.new_id(request.chat)
        body = replies.full_reply(
            request, reply_id, self.server.model_id, finished, "".join(reasoning), logprobs
        )
        self._send_json(200, body)

    def _stream(self, request: schema.ApiRequest, first: Event, rest: Iterator[Event]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # no Content-Length: the end of the body is EOF
        self.end_headers()
        self.close_connection = True
        reply_id, model = replies.new_id(request.chat), self.server.model_id
        if request.chat:
            self._send_event(replies.role_chunk(request, reply_id, model))
        prepared = None
        pending: list[TokenLogprob] = []  # tokens whose logprobs ride on the next text chunk
        try:
            for event in _chain(first, rest):
                if isinstance(event, PromptPrepared):
                    prepared = event
                elif isinstance(event, TokenLogprob):
                    pending.append(event)
                elif isinstance(event, TextDelta) and event.text:
                    body = replies.chunk(request, reply_id, model, event.text, logprobs=pending)
                    self._send_event(body)
                    pending = []
                elif isinstance(event, ReasoningDelta) and event.text and request.chat:
                    self._send_event(replies.reasoning_chunk(request, reply_id, model, event.text))
                elif isinstance(event, ToolCallDelta) and request.chat:
                    self._send_event(replies.tool_call_chunk(request, reply_id, model, event))
                elif isinstance(event, Finished):
                    if pending:  # held-back tokens (a stop string's start, a tool call)
                        empty = "" if request.chat else None
                        self._send_event(
                            replies.chunk(request, reply_id, model, empty, logprobs=pending)
                        )
                    self._finish_stream(
                        request, reply_id, replies.with_prompt_counts(event, prepared)
                    )
        except EngineError as exc:  # headers are out: report in-band, as vLLM does
            self._send_event(replies.api_error(exc).body())
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception:
            log.exception("generation failed mid-stream")
            self._send_event(ApiError(500, "internal server error").body())
        self._send_raw(b"data: [DONE]\n\n")

    def _finish_stream(self, request: schema.ApiRequest, reply_id: str, finished: Finished) -> None:
        model = self.server.model_id
        if finished.reason == FinishReason.ERROR:
            self._send_event(ApiError(500, failure_message(finished.error)).body())
            return
        reason = replies.finish_reason(finished.reason)
        self._send_event(replies.chunk(request, reply_id, model, None, reason))
        if request.include_usage:
            self._send_event(replies.usage_chunk(request, reply_id, model, finished.stats))

    def _send_event(self, body: dict[str, Any]) -> None:
        self._send_raw(b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n")

    def _send_raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="hearth"')
        if status == 405:
            self.send_header("Allow", "GET, POST")
        self.end_headers()
        self.wfile.write(data)


def _with_stored_images(request: schema.ApiRequest, allow_urls: bool) -> schema.ApiRequest:
    """``request`` with its pictures as files (`engine.serve.images.store_images`)."""
    generation = request.generation
    messages = store_images(generation.messages, request.images, allow_urls)
    return dataclasses.replace(
        request, generation=dataclasses.replace(generation, messages=messages), images={}
    )


def _chain(first: Event, rest: Iterator[Event]) -> Iterator[Event]:
    yield first
    yield from rest


def _client_gone(sock: socket.socket) -> bool:
    """True when the peer closed its end (readable with nothing to read).

    A non-blocking peek rather than select(): select() fails on descriptors past 1024, which
    a busy app process can reach.
    """
    timeout = sock.gettimeout()
    try:
        sock.settimeout(0)
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False  # nothing to read: still connected
    except OSError:
        return True
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(timeout)


def failure_message(error: str | None) -> str:
    """A failed reply's error for the client: one line, at most 300 characters, said once
    ("generation failed: generation failed: …" and ~40 lines of grammar state reached clients)."""
    text = " ".join((error or "").split())
    if not text.startswith("generation failed"):
        text = f"generation failed: {text}" if text else "generation failed"
    return text[:300]
