"""The audit's attacks on the local server (issue 12, rows 2, 3 and 9), kept as regressions.

Each test sends what a hostile web page or client sent: raw bytes over a real socket to the
real server on 127.0.0.1, over the tiny random engine wrapped in a `WrappingBackend` (so a test can
see whether the engine ran at all). The server is key-less, as the app's "serve" toggle runs
it, unless a test says otherwise.
"""

from __future__ import annotations

import json
import socket

import pytest

from engine.serve.server import serve_in_thread
from engine.types import FinishReason
from tests.engine.support.served import exchange, http_request
from tests.engine.support.wrapping import WrappingBackend

JSON = {"Content-Type": "application/json"}
HELLO = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 2, "temperature": 0}


@pytest.fixture(scope="module")
def recorder(tiny_engine) -> WrappingBackend:  # type: ignore[no-untyped-def]
    return WrappingBackend(tiny_engine)


@pytest.fixture(scope="module")
def server(recorder: WrappingBackend):  # type: ignore[no-untyped-def]
    with serve_in_thread(recorder) as handle:
        yield handle


def post(port: int, body: object, **headers: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    """POST ``body`` (JSON-encoded unless bytes) with Host 127.0.0.1 and ``headers``."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    given = {k.replace("_", "-"): v for k, v in headers.items()}
    fields = {"Host": f"127.0.0.1:{port}", **JSON, **given}
    fields = {k: v for k, v in fields.items() if v is not None}
    status, kind, raw = exchange(port, http_request("POST", "/v1/chat/completions", data, fields))
    assert kind == "application/json", raw[:200]
    return status, json.loads(raw)


def assert_openai_error(body: dict, code: str | None = None) -> str:  # type: ignore[type-arg]
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert "Traceback" not in error["message"]
    if code is not None:
        assert error["code"] == code
    return str(error["message"])


# ---- row 2: web pages and DNS rebinding ----------------------------------------------------


def test_a_web_page_posting_text_plain_gets_415_and_the_engine_never_runs(
    server, recorder: WrappingBackend
) -> None:  # type: ignore[no-untyped-def]
    before = recorder.started
    status, body = post(server.port, HELLO, Content_Type="text/plain;charset=UTF-8")
    assert status == 415
    assert "application/json" in assert_openai_error(body, "unsupported_media_type")
    status, body = post(server.port, HELLO, Content_Type=None)  # a Blob body sends no type
    assert status == 415
    assert recorder.started == before


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "https://127.0.0.1.evil.example", "file://"]
)
def test_a_foreign_origin_gets_403_and_the_engine_never_runs(
    server, recorder: WrappingBackend, origin: str
) -> None:  # type: ignore[no-untyped-def]
    before = recorder.started
    status, body = post(server.port, HELLO, Origin=origin)
    assert status == 403
    assert_openai_error(body, "forbidden_origin")
    assert body["error"]["type"] == "permission_error"
    assert recorder.started == before


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8765", "10.0.0.5"])
def test_a_dns_rebinding_host_gets_403_for_reads_and_writes(
    server, recorder: WrappingBackend, host: str
) -> None:  # type: ignore[no-untyped-def]
    before = recorder.started
    status, body = post(server.port, HELLO, Host=host, Origin=f"http://{host}")
    assert status == 403
    assert_openai_error(body, "forbidden_host")
    request = http_request("GET", "/v1/models", headers={"Host": host})
    status, _, raw = exchange(server.port, request)
    assert status == 403 and json.loads(raw)["error"]["code"] == "forbidden_host"
    assert recorder.started == before


@pytest.mark.parametrize(
    "host, origin",
    [
        ("localhost:{port}", None),
        ("127.0.0.1:{port}", "http://localhost:3000"),
        ("[::1]:{port}", "http://[::1]:5173"),
        ("LOCALHOST", "https://127.0.0.1"),
    ],
)
def test_loopback_hosts_and_pages_on_localhost_are_served(server, host: str, origin) -> None:  # type: ignore[no-untyped-def]
    status, body = post(server.port, HELLO, Host=host.format(port=server.port), Origin=origin)
    assert status == 200, body
    assert body["choices"][0]["message"]["role"] == "assistant"


def test_allow_remote_serves_other_host_names_but_still_refuses_foreign_pages(
    recorder: WrappingBackend,
) -> None:
    with serve_in_thread(recorder, api_key="k-123", allow_remote=True) as handle:
        key = {"Authorization": "Bearer k-123"}
        status, _ = post(handle.port, HELLO, Host="my-box.lan:8765", **key)
        assert status == 200
        status, body = post(handle.port, HELLO, Origin="http://evil.example", **key)
        assert status == 403 and body["error"]["code"] == "forbidden_origin"


# ---- row 3: a non-streaming client that hangs up ---------------------------------------------


def test_a_non_streaming_client_that_hangs_up_stops_its_generation(
    server, recorder: WrappingBackend
) -> None:  # type: ignore[no-untyped-def]
    # Greedy on the tiny model never emits EOS: uncancelled, this runs to the full window.
    body = json.dumps({**HELLO, "max_tokens": 100_000}).encode()
    headers = {"Host": "127.0.0.1", **JSON}
    started, finished = recorder.started, len(recorder.finished)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(http_request("POST", "/v1/chat/completions", body, headers))
        assert recorder.wait_for_started(started + 1)
    assert recorder.wait_for_finished(finished + 1), "the generation did not stop"
    assert recorder.finished[finished].reason == FinishReason.CANCELLED
    status, reply = post(server.port, HELLO)  # the next request is served
    assert status == 200 and reply["choices"][0]["finish_reason"] in ("stop", "length")


# ---- row 9: hostile bodies and headers ------------------------------------------------------


def _deep(depth: int) -> bytes:
    return b'{"messages": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(
    "body, words",
    [
        ({"messages": [{"role": ["user"], "content": "x"}]}, "role must be"),
        ({"messages": [{"role": {"a": 1}, "content": "x"}]}, "role must be"),
        (_deep(100_000), "nested too deeply"),
        (b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}', "NaN"),
        (b'{"messages": [{"role": "user", "content": "x"}], "top_p": 1e400}', "out of range"),
        (b'{"messages": [{"role": "user", "content": "x"}], "seed": 1' + b"0" * 40 + b"}", "64"),
        (b'{"messages": [{"role": "user", "content": "x"}]', "not valid JSON"),
        ('{"messages": "\u00e9"}'.encode("latin-1"), "not valid JSON"),
    ],
    ids=[
        "list-role",
        "object-role",
        "100k-deep",
        "nan",
        "1e400",
        "41-digit-int",
        "truncated",
        "not-utf8",
    ],
)
def test_hostile_bodies_get_400_with_an_openai_error(server, body: object, words: str) -> None:  # type: ignore[no-untyped-def]
    status, reply = post(server.port, body)
    assert status == 400, reply
    assert words in assert_openai_error(reply)
    assert reply["error"]["type"] == "invalid_request_error"


def test_max_tokens_of_1e13_is_clamped_to_the_context_window(
    server, recorder: WrappingBackend, tiny_engine
) -> None:  # type: ignore[no-untyped-def]
    window = tiny_engine.info.context_window
    # A prompt that leaves little room, so the clamped reply (greedy: never EOS) stays short.
    prompt = "word " * (window - 100)
    messages = [{"role": "user", "content": prompt}]
    assert tiny_engine.count_tokens(tuple(_msgs(messages))) < window - 20
    status, body = post(server.port, {"messages": messages, "max_tokens": 10**13, "temperature": 0})
    assert status == 200, body
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"] <= window


def _msgs(raw: list[dict]) -> list:  # type: ignore[type-arg]
    from engine.types import Message

    return [Message(m["role"], m["content"]) for m in raw]


@pytest.mark.parametrize(
    "lengths",
    [["\u00b2"], ["12", "12"], ["12", "5"], ["-1"], ["0x10"], ["1" * 30], [], ["40000000"]],
    ids=[
        "superscript-two",
        "duplicated",
        "conflicting",
        "negative",
        "hex",
        "30-digits",
        "missing",
        "over-the-32MB-cap",
    ],
)
def test_a_bad_content_length_gets_400(server, lengths: list[str]) -> None:  # type: ignore[no-untyped-def]
    body = json.dumps(HELLO).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n{_lines(JSON)}"
    head += "".join(f"Content-Length: {n}\r\n" for n in lengths)
    status, _, raw = exchange(server.port, head.encode("latin-1") + b"\r\n" + body)
    assert status in (400, 413), raw
    assert_openai_error(json.loads(raw))


def _lines(headers: dict[str, str]) -> str:
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items())


def test_the_body_is_not_read_before_the_key_check(recorder: WrappingBackend) -> None:
    with serve_in_thread(recorder, api_key="k-456") as handle:
        # Announce a large body and send none: the 401 must come without waiting for it.
        head = http_request(
            "POST",
            "/v1/chat/completions",
            headers={"Host": "127.0.0.1", **JSON, "Content-Length": "5000000"},
        )
        status, _, raw = exchange(handle.port, head, timeout=30)
    assert status == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key"


def test_connections_past_the_cap_get_503_and_the_held_ones_still_work(
    recorder: WrappingBackend,
) -> None:
    with serve_in_thread(recorder, max_connections=2) as handle:
        held = [socket.create_connection(("127.0.0.1", handle.port)) for _ in range(2)]
        try:
            status, _, raw = exchange(handle.port, http_request("GET", "/health"))
            assert status == 503 and json.loads(raw)["error"]["code"] == "server_busy"
            for sock in held:
                sock.sendall(http_request("GET", "/health", headers={"Host": "127.0.0.1"}))
                assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"GET /a b HTTP/1.1\r\n\r\n", 400),
        (b"PUT /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405),
        (b"BREW /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501),
        (b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ],
    ids=["garbage-line", "put", "unknown-method", "huge-header"],
)
def test_the_http_parsers_own_refusals_are_openai_json_too(
    server, request_bytes: bytes, status: int
) -> None:  # type: ignore[no-untyped-def]
    got, kind, raw = exchange(server.port, request_bytes)
    assert got == status and kind == "application/json"
    assert_openai_error(json.loads(raw))
