"""The local server against hostile clients (issue 22 A6, A12, A13): many simultaneous
connections, an over-context prompt, fields it would otherwise ignore. A real server on
127.0.0.1 over the tiny engine."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from engine.serve.server import MAX_CONNECTIONS, serve_in_thread
from tests.engine.support.served import exchange, http_request
from tests.engine.support.wrapping import WrappingBackend

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def recorder(tiny_engine) -> WrappingBackend:  # type: ignore[no-untyped-def]
    return WrappingBackend(tiny_engine)


def post(port: int, body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
    data = json.dumps(body).encode()
    fields = {"Host": f"127.0.0.1:{port}", **JSON}
    status, _, raw = exchange(port, http_request("POST", "/v1/chat/completions", data, fields))
    return status, json.loads(raw)


def test_32_simultaneous_clients_are_all_served(recorder: WrappingBackend) -> None:
    """A6: 32 clients connect at once while the accept loop is held; each is answered (with
    the stdlib's backlog of 5 most were reset or left waiting for a SYN retry)."""
    with serve_in_thread(recorder) as handle:
        server = handle._server
        assert server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        assert server.request_queue_size >= MAX_CONNECTIONS
        clients = [socket.socket() for _ in range(32)]
        for c in clients:
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", handle.port))
        answered: list[bytes] = []
        lock = threading.Lock()

        def ask(sock: socket.socket) -> None:
            sock.setblocking(True)
            sock.settimeout(30)
            sock.sendall(http_request("GET", "/health", headers={"Host": "127.0.0.1"}))
            with lock:
                answered.append(sock.recv(64))

        threads = [threading.Thread(target=ask, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in clients:
            c.close()
    assert len(answered) == 32 and all(a.startswith(b"HTTP/1.1 200") for a in answered)


def test_past_the_cap_the_503_engages(recorder: WrappingBackend) -> None:
    """A6: 70 idle connections against the cap of 64: the ones past it get the 503 reply, none
    is reset."""
    with serve_in_thread(recorder) as handle:
        held = [socket.create_connection(("127.0.0.1", handle.port)) for _ in range(70)]
        try:
            busy = 0
            for sock in held[MAX_CONNECTIONS:]:
                sock.settimeout(10)
                busy += sock.recv(64).startswith(b"HTTP/1.1 503")
            assert busy == 70 - MAX_CONNECTIONS
        finally:
            for sock in held:
                sock.close()


def test_an_over_context_prompt_is_refused_by_size_before_tokenizing(
    recorder: WrappingBackend,
) -> None:
    """A12: a prompt far over the context is refused from its length alone: the engine never
    starts on it."""
    window = recorder.info.context_window
    with serve_in_thread(recorder) as handle:
        before = recorder.started
        text = "word " * (window * 8)  # 40 characters per token of context
        status, body = post(handle.port, {"messages": [{"role": "user", "content": text}]})
    assert status == 400 and body["error"]["code"] == "context_length_exceeded"
    assert "characters" in body["error"]["message"]
    assert recorder.started == before


@pytest.mark.parametrize(
    ("field", "value"), [("logprobs", "yes"), ("top_logprobs", 3)], ids=["logprobs", "top"]
)
def test_bad_logprob_fields_are_a_400_naming_them(recorder: WrappingBackend, field, value) -> None:
    """A13: never a 200 that silently ignores what was asked (``top_logprobs`` needs
    ``logprobs: true``)."""
    with serve_in_thread(recorder) as handle:
        status, body = post(
            handle.port, {"messages": [{"role": "user", "content": "hi"}], field: value}
        )
    assert status == 400 and body["error"]["param"] == field and field in body["error"]["message"]
