"""Hearth's local OpenAI-compatible HTTP server over any `Backend` (normally the local Engine).

Owns the sockets: a stdlib ``ThreadingHTTPServer`` whose handler threads parse requests and
write replies, and ONE engine worker thread that runs generations in arrival order (the engine
owns its model on one thread). A client that disconnects cancels its generation, whether it is
running or still queued. Owns the bind policy: loopback by default; any other address needs
``allow_remote`` and an API key. Does not own the wire format (`engine.serve.schema`) or the
model (the backend).

Routes: ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/completions`` (stream and
not), ``GET /health``. Every error is an OpenAI-style JSON body; the server keeps serving.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import queue
import select
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.errors import (
    ContextOverflowError,
    EngineError,
    InvalidParamsError,
)
from engine.serve import schema
from engine.types import Backend, Event, Finished, FinishReason, PromptPrepared, TextDelta

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024
_END = object()  # sentinel: the worker has finished a job
_POLL_S = 0.2  # how often a waiting handler checks whether its client hung up


@dataclass(eq=False)  # identity hashing: jobs live in a set
class _Job:
    request: schema.ApiRequest
    cancel: threading.Event
    events: queue.Queue[object]


class _EngineWorker:
    """The one thread that touches the backend. Jobs run strictly in submission order.

    By default the worker owns a single-thread executor. The app passes its own engine
    executor instead, so the chat window and API clients take turns on the same thread.
    """

    def __init__(self, backend: Backend, executor: Executor | None = None) -> None:
        self.backend = backend
        self._owned = executor is None
        self._executor = executor or ThreadPoolExecutor(1, thread_name_prefix="hearth-server")
        self._lock = threading.Lock()
        self._live: set[_Job] = set()  # submitted and not yet ended

    def submit(self, request: schema.ApiRequest) -> _Job:
        job = _Job(request=request, cancel=threading.Event(), events=queue.Queue())
        with self._lock:
            self._live.add(job)
        self._executor.submit(self._run, job)
        return job

    def stop(self) -> None:
        """Cancel every queued or running job; wait for our own thread to finish."""
        with self._lock:
            for job in self._live:
                job.cancel.set()
        if self._owned:
            self._executor.shutdown(wait=True)

    def _run(self, job: _Job) -> None:
        try:
            if not job.cancel.is_set():  # its client left while it waited in the queue
                self._check_fits(job.request)
                for event in self.backend.generate(job.request.generation, job.cancel):
                    job.events.put(event)
        except Exception as exc:  # report to the handler; the worker keeps serving
            job.events.put(exc)
        finally:
            with self._lock:
                self._live.discard(job)
            job.events.put(_END)

    def _check_fits(self, request: schema.ApiRequest) -> None:
        # An API client expects a 400 for a prompt that does not fit, not silently dropped turns.
        window = self.backend.info.context_window
        if not window:
            return
        count = self.backend.count_tokens(request.generation.messages)
        if count >= window:
            raise ContextOverflowError(
                f"the prompt is {count} tokens; this model's context window is {window} tokens"
            )


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck keep-alive client must not block shutdown

    def __init__(
        self,
        address: tuple[str, int],
        backend: Backend,
        api_key: str | None,
        model_id: str,
        executor: Executor | None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)
        self.worker = _EngineWorker(backend, executor)
        self.api_key = api_key
        self.model_id = model_id
        self.aliases = {"", model_id, "bundled", backend.info.name, backend.info.source}


class _Handler(BaseHTTPRequestHandler):
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

    def _route_get(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            return self._send_json(200, {"status": "ok"})
        self._authorize()
        if path in ("/v1/models", "/models"):
            info = self.server.worker.backend.info
            return self._send_json(
                200, schema.models_list(self.server.model_id, info.context_window)
            )
        raise schema.ApiError(404, f"no route GET {path}", code="not_found")

    def _route_post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._read_body()  # always drain the body, so keep-alive stays in sync
        self._authorize()
        if path not in ("/v1/chat/completions", "/v1/completions"):
            raise schema.ApiError(404, f"no route POST {path}", code="not_found")
        request = schema.parse_request(
            schema.parse_json(body), chat=path.endswith("chat/completions")
        )
        if request.model not in self.server.aliases:
            raise schema.ApiError(
                404,
                f"model {request.model!r} is not served here; use {self.server.model_id!r}",
                param="model",
                code="model_not_found",
            )
        self._complete(request)

    def _guard(self, route: Any) -> None:
        """Run a route; turn every failure into an OpenAI-style error reply."""
        try:
            route()
        except schema.ApiError as exc:
            self._send_json(exc.status, exc.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            log.exception("request failed")
            self._send_json(500, schema.ApiError(500, "internal server error").body())

    def _authorize(self) -> None:
        key = self.server.api_key
        if key is None:
            return
        given = self.headers.get("Authorization", "")
        token = given[7:] if given.lower().startswith("bearer ") else ""
        if not hmac.compare_digest(token.encode(), key.encode()):
            raise schema.ApiError(
                401,
                "missing or incorrect API key (send Authorization: Bearer KEY)",
                code="invalid_api_key",
            )

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            raise schema.ApiError(400, "the request needs a Content-Length header")
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            raise schema.ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        return self.rfile.read(int(length))

    # ---- generation -------------------------------------------------------------------------

    def _complete(self, request: schema.ApiRequest) -> None:
        job = self.server.worker.submit(request)
        try:
            events = self._events(job)
            first = next(events, None)  # errors before any text still get a proper status
            if first is None:  # cancelled before it started (the server is stopping)
                raise schema.ApiError(503, "the request was cancelled before it started")
            schema.refuse_dropped_turns(first)
            if request.stream:
                self._stream(request, first, events)
            else:
                self._reply_whole(request, first, events)
        except (BrokenPipeError, ConnectionResetError):
            job.cancel.set()
            self.close_connection = True
        except EngineError as exc:
            raise schema.api_error(exc) from None
        finally:
            job.cancel.set()  # no-op once the job ended; stops it if the handler failed

    def _events(self, job: _Job) -> Iterator[Event]:
        """The job's events as the worker produces them; cancels the job if the client leaves."""
        while True:
            try:
                item = job.events.get(timeout=_POLL_S)
            except queue.Empty:
                if _client_gone(self.connection):
                    job.cancel.set()
                    raise ConnectionResetError("client disconnected") from None
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]

    def _reply_whole(self, request: schema.ApiRequest, first: Event, rest: Iterator[Event]) -> None:
        prepared, finished = None, None
        for event in _chain(first, rest):
            if isinstance(event, PromptPrepared):
                prepared = event
            elif isinstance(event, Finished):
                finished = event
        finished = schema.with_prompt_counts(schema.require_finished(finished), prepared)
        if finished.reason == FinishReason.ERROR:
            raise schema.ApiError(500, f"generation failed: {finished.error}")
        reply_id = schema.new_id(request.chat)
        self._send_json(200, schema.full_reply(request, reply_id, self.server.model_id, finished))

    def _stream(self, request: schema.ApiRequest, first: Event, rest: Iterator[Event]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # no Content-Length: the end of the body is EOF
        self.end_headers()
        self.close_connection = True
        reply_id, model = schema.new_id(request.chat), self.server.model_id
        if request.chat:
            self._send_event(schema.role_chunk(request, reply_id, model))
        prepared = None
        try:
            for event in _chain(first, rest):
                if isinstance(event, PromptPrepared):
                    prepared = event
                elif isinstance(event, TextDelta) and event.text:
                    self._send_event(schema.chunk(request, reply_id, model, event.text))
                elif isinstance(event, Finished):
                    self._finish_stream(
                        request, reply_id, schema.with_prompt_counts(event, prepared)
                    )
        except EngineError as exc:  # headers are out: report in-band, as vLLM does
            self._send_event(schema.api_error(exc).body())
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception:
            log.exception("generation failed mid-stream")
            self._send_event(schema.ApiError(500, "internal server error").body())
        self._send_raw(b"data: [DONE]\n\n")

    def _finish_stream(self, request: schema.ApiRequest, reply_id: str, finished: Finished) -> None:
        model = self.server.model_id
        if finished.reason == FinishReason.ERROR:
            self._send_event(schema.ApiError(500, f"generation failed: {finished.error}").body())
            return
        reason = schema.finish_reason(finished.reason)
        self._send_event(schema.chunk(request, reply_id, model, None, reason))
        if request.include_usage:
            self._send_event(schema.usage_chunk(request, reply_id, model, finished.stats))

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
        self.end_headers()
        self.wfile.write(data)


def _chain(first: Event, rest: Iterator[Event]) -> Iterator[Event]:
    yield first
    yield from rest


def _client_gone(sock: socket.socket) -> bool:
    """True when the peer closed its end (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


# ---- starting and stopping ------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_key: str | None, allow_remote: bool) -> None:
    """Refuse a non-loopback bind unless explicitly allowed AND protected by a key."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise InvalidParamsError(
            f"binding {host} would expose the model to the network; pass --allow-remote "
            "(and --api-key) to do that on purpose, or use 127.0.0.1"
        )
    if not api_key:
        raise InvalidParamsError(f"binding {host} needs an API key (--api-key or HEARTH_API_KEY)")


class ServerHandle:
    """A running server: its ``url`` (``http://host:port/v1``) and `stop`."""

    def __init__(self, server: _Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        host, port = server.server_address[:2]
        self.host, self.port = str(host), int(port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}/v1"

    def stop(self) -> None:
        """Stop accepting, cancel nothing in flight abruptly, and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._server.worker.stop()
        self._thread.join(timeout=10)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def make_server(
    backend: Backend,
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    *,
    allow_remote: bool = False,
    model_id: str | None = None,
    executor: Executor | None = None,
) -> _Server:
    check_bind(host, api_key, allow_remote)
    try:
        name = model_id or backend.info.name
        return _Server((host, port), backend, api_key or None, name, executor)
    except OSError as exc:
        raise InvalidParamsError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve_in_thread(
    backend: Backend,
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    *,
    allow_remote: bool = False,
    model_id: str | None = None,
    executor: Executor | None = None,
) -> ServerHandle:
    """Start serving ``backend`` on a daemon thread (tests; the app's "serve locally" toggle).

    ``port=0`` picks a free port; read it from the handle. Generations run on ``executor``
    (a single-worker executor that already owns the backend, e.g. the app's engine thread) or,
    when None, on a thread of the server's own; nobody else may drive the backend then.
    """
    server = make_server(
        backend,
        host,
        port,
        api_key,
        allow_remote=allow_remote,
        model_id=model_id,
        executor=executor,
    )
    thread = threading.Thread(target=server.serve_forever, name="hearth-server", daemon=True)
    thread.start()
    return ServerHandle(server, thread)
