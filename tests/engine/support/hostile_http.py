"""A hostile file server on 127.0.0.1 for the hub's hardening tests (issue 22 part A).

One stdlib `http.server` in a thread serving one body under any path, with faults: answer every
range with 206 but send the whole (over-long) body anyway, send more bytes than announced, or
trickle bytes with a pause between them. It counts the body bytes it managed to send.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class HostileServer:
    body: bytes = b""
    announce: int | None = None  # the size claimed in Content-Range / Content-Length
    ignore_range: bool = False  # 206, but the body from byte 0 to the end, whatever was asked
    trickle_after: int | None = None  # after this many bytes, one byte per `trickle_pause_s`
    trickle_pause_s: float = 0.0
    sent: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HostileServer:
        outer = self

        class Handler(_Handler):
            server_state = outer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_state: HostileServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        state = self.server_state
        self.send_response(200)
        self.send_header("Content-Length", str(state.announce or len(state.body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self) -> None:
        state = self.server_state
        state.requests.append(dict(self.headers))
        total = state.announce or len(state.body)
        start, end = 0, total - 1
        wanted = self.headers.get("Range", "")
        if wanted.startswith("bytes="):
            first, _, last = wanted[6:].partition("-")
            start = int(first)
            end = int(last) if last else total - 1
        body = state.body if state.ignore_range else state.body[start : end + 1]
        if state.ignore_range:
            start, end = 0, total - 1  # says so honestly in Content-Range
        self.send_response(206 if wanted else 200)
        if wanted:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.send_header("Connection", "close")
        self.end_headers()  # no Content-Length: the body runs until the connection closes
        self.close_connection = True
        self._send(body)

    def _send(self, body: bytes) -> None:
        state = self.server_state
        try:
            for offset in range(0, len(body), 65536):
                if state.trickle_after is not None and offset >= state.trickle_after:
                    for byte in body[offset:]:
                        time.sleep(state.trickle_pause_s)
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        state.sent += 1
                    return
                piece = body[offset : offset + 65536]
                self.wfile.write(piece)
                state.sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what we want from it
