"""Hearth's local OpenAI-compatible HTTP server over any `Backend` (normally the local Engine).

Owns the sockets: a stdlib ``ThreadingHTTPServer`` (at most ``max_connections`` at once) whose
handler threads parse requests and write replies, handing generations to the one engine worker
(`engine.serve.worker`), and starting and stopping. What a handler does with one request
(routing, the guard, streaming, cancelling when the client leaves) is `engine.serve.handler`.
Does not own the wire format (`engine.serve.schema`) or the model.

Routes: ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/completions`` (stream and
not), ``POST /v1/moderations`` (with a safety review), ``GET /health``. Every error is an
OpenAI-style JSON body; the server keeps serving. With a `SafetyReview`, every generation goes
through it (`engine.safety.review.ReviewedBackend`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent.futures import Executor
from http.server import ThreadingHTTPServer
from typing import Any

from engine.errors import InvalidParamsError
from engine.safety.review import ReviewedBackend, SafetyReview
from engine.serve import guard
from engine.serve.guard import check_bind, is_loopback
from engine.serve.handler import RequestHandler
from engine.serve.worker import EngineWorker
from engine.types import Backend

__all__ = ["ServerHandle", "check_bind", "is_loopback", "make_server", "serve_in_thread"]

MAX_CONNECTIONS = 64  # each connection holds a thread; past this, new ones get a 503


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck keep-alive client must not block shutdown
    # The stdlib listens with a backlog of 5: 10-17 of 32 simultaneous clients were reset
    # before the accept loop saw them, and the connection cap's 503 never engaged.
    request_queue_size = 2 * MAX_CONNECTIONS

    def __init__(
        self,
        address: tuple[str, int],
        backend: Backend,
        api_key: str | None,
        model_id: str,
        executor: Executor | None,
        *,
        allow_remote: bool = False,
        max_connections: int = MAX_CONNECTIONS,
        review: SafetyReview | None = None,
        allow_image_urls: bool = False,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, RequestHandler)
        self.review = review
        served = ReviewedBackend(backend, review) if review is not None else backend
        self.worker = EngineWorker(served, executor)
        self.api_key = api_key
        self.allow_remote = allow_remote
        self.allow_image_urls = allow_image_urls  # fetch http(s) image parts (engine.serve.images)
        self.model_id = model_id
        self.context_window = backend.info.context_window
        self.aliases = {"", model_id, "bundled", backend.info.name, backend.info.source}
        self._slots = threading.BoundedSemaphore(max_connections)

    # A thread per connection, but not without bound: past the cap a new connection gets a
    # 503 at once (as nginx does), instead of every handler thread and buffer piling up.
    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _refuse_busy(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.settimeout(1)  # a client that reads nothing must not stall the accept loop
        sock.sendall(guard.BUSY_REPLY)


# ---- starting and stopping ------------------------------------------------------------------


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
    max_connections: int = MAX_CONNECTIONS,
    review: SafetyReview | None = None,
    allow_image_urls: bool = False,
) -> _Server:
    check_bind(host, api_key, allow_remote)
    try:
        name = model_id or backend.info.name
        return _Server(
            (host, port),
            backend,
            api_key or None,
            name,
            executor,
            allow_remote=allow_remote,
            max_connections=max_connections,
            review=review,
            allow_image_urls=allow_image_urls,
        )
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
    max_connections: int = MAX_CONNECTIONS,
    review: SafetyReview | None = None,
    allow_image_urls: bool = False,
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
        max_connections=max_connections,
        review=review,
        allow_image_urls=allow_image_urls,
    )
    thread = threading.Thread(target=server.serve_forever, name="hearth-server", daemon=True)
    thread.start()
    return ServerHandle(server, thread)
