"""Test helpers for the HTTP tests: an echoing backend, a canned-reply socket server, raw HTTP.

(The backend observer is `tests.engine.support.wrapping.WrappingBackend`.)
`CannedServer` is a raw socket server on loopback that answers every connection with fixed
bytes: the only way to get a malformed stream, a 429 or a silent server on demand.
`exchange` sends bytes no well-behaved client would send (bad headers, a hostile Origin) and
reads the reply with the stdlib's HTTP parser.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Iterator

from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    ModelInfo,
    Stats,
    TextDelta,
)


class EchoBackend:
    """A `Backend` that answers at once with the start of the last message, a character a
    token: for tests of the server's request handling that must not wait on a model."""

    info = ModelInfo(
        name="echo", source="echo", backend="echo", device="cpu", dtype="-", context_window=256
    )

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        reply = request.messages[-1].content[: request.params.max_new_tokens][:16]
        for i, char in enumerate(reply):
            if cancel is not None and cancel.is_set():
                yield Finished(FinishReason.CANCELLED, Stats(completion_tokens=i), reply[:i])
                return
            yield TextDelta(text=char, token_index=i + 1)
        stats = Stats(
            prompt_tokens=self.count_tokens(request.messages), completion_tokens=len(reply)
        )
        yield Finished(FinishReason.STOP, stats, reply)

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        return sum(len(m.content) // 4 + 4 for m in messages)

    def close(self) -> None:
        pass


class CannedServer:
    """Accepts connections on 127.0.0.1 and answers each with ``reply`` (None: say nothing)."""

    def __init__(self, reply: bytes | None, *, stall: bool = False) -> None:
        self.reply = reply
        self.stall = stall  # send ``reply`` and then keep the connection open, silent
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            if self._stop.is_set():
                conn.close()
                return
            self._conns.append(conn)
            _read_request(conn)  # its content does not matter, but unread bytes would reset
            if self.reply is not None:
                conn.sendall(self.reply)
                if not self.stall:
                    conn.close()

    def close(self) -> None:
        self._stop.set()
        # accept() does not wake when another thread closes the socket: connect once instead.
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
            pass
        self._thread.join(timeout=5)
        self._sock.close()
        for conn in self._conns:
            conn.close()

    def __enter__(self) -> CannedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_request(conn: socket.socket) -> None:
    """Read one request to its end: closing with bytes unread sends a reset, and the client
    may then lose the reply it has not read yet."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return
        data += more
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(v)
            for k, _, v in (line.partition(b":") for line in head.split(b"\r\n"))
            if k.strip().lower() == b"content-length"
        ),
        0,
    )
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return
        body += more


def sse_reply(*events: str, status: str = "200 OK") -> bytes:
    """An HTTP/1.1 response whose body is ``events`` as raw SSE lines (connection closes)."""
    body = "".join(events).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    ).encode()
    return head + body


def json_reply(status: str, body: str) -> bytes:
    data = body.encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode() + data


def free_port() -> int:
    """A port nothing listens on (bound then released)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


def http_request(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    """A raw HTTP/1.1 request; ``headers`` are sent as given (none added but Content-Length
    for a body, unless ``headers`` names one)."""
    fields = dict(headers or {})
    if body and not any(k.lower() == "content-length" for k in fields):
        fields["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return head.encode("latin-1") + b"\r\n" + body


def exchange(port: int, request: bytes, timeout: float = 60) -> tuple[int, str, bytes]:
    """Send ``request`` to 127.0.0.1:``port``; the reply's status, Content-Type and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        return reply.status, reply.headers.get("Content-Type", ""), reply.read()
