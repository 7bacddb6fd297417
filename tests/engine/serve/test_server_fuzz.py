"""Property-based fuzzing of the local server's request handling (issue 12).

A real server on 127.0.0.1 over `EchoBackend` (a backend that answers at once, so examples
cost milliseconds), fed arbitrary JSON bodies, arbitrary bytes and arbitrary headers. The
property: every request gets a well-formed reply; a refusal is a 4xx with an OpenAI-style
error body written as a sentence, never a 500, a traceback or Python's own error text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.serve.server import ServerHandle, serve_in_thread
from tests.engine.support.served import EchoBackend, exchange

KEY = "fuzz-key-5521"
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
PYTHON_ERROR = re.compile(
    r"Traceback|has no attribute|KeyError|TypeError|not subscriptable|unhashable"
    r"|invalid literal|object is not|argument must be|internal server error"
)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with serve_in_thread(EchoBackend()) as handle:
        yield handle


@pytest.fixture(scope="module")
def keyed() -> Iterator[ServerHandle]:
    with serve_in_thread(EchoBackend(), api_key=KEY) as handle:
        yield handle


def check_reply(status: int, kind: str, raw: bytes) -> None:
    assert status < 500, raw[:300]
    if status == 200 and kind.startswith("text/event-stream"):
        assert raw.rstrip().endswith(b"data: [DONE]")
        return
    assert kind == "application/json", (status, raw[:300])
    body = json.loads(raw)
    if status >= 400:
        error = body["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert isinstance(error["message"], str) and error["message"]
        assert not PYTHON_ERROR.search(error["message"]), error["message"]


# ---- bodies ---------------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_FIELDS = [
    "model", "stream", "stream_options", "n", "max_tokens", "max_completion_tokens",
    "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "repeat_penalty",
    "seed", "stop", "continue_final_message", "prompt",
]  # fmt: skip
_role = st.one_of(st.sampled_from(["user", "system", "assistant", "developer"]), _json)
_content = st.one_of(
    st.text(max_size=20), _json, st.lists(st.fixed_dictionaries({"type": _json, "text": _json}))
)
_message = st.one_of(st.fixed_dictionaries({"role": _role, "content": _content}), _json)


@st.composite
def _requests(draw: st.DrawFn) -> Any:
    """Bodies shaped like a real request, any field holding any JSON value."""
    body: dict[str, Any] = {"messages": draw(st.one_of(st.lists(_message, max_size=3), _json))}
    for name in draw(st.lists(st.sampled_from(_FIELDS), max_size=4, unique=True)):
        body[name] = draw(_json)
    return draw(st.one_of(st.just(body), _json))


def _post(url: str, path: str, data: bytes, **headers: str) -> httpx.Response:
    headers = {"Content-Type": "application/json", **headers}
    return httpx.post(f"{url}{path}", content=data, headers=headers, timeout=60)


@FUZZ
@given(body=_requests(), chat=st.booleans())
def test_any_json_body_gets_a_reply_or_a_clear_400(
    server: ServerHandle, body: Any, chat: bool
) -> None:
    path = "/chat/completions" if chat else "/completions"
    data = json.dumps(body, allow_nan=True).encode()
    rsp = _post(server.url, path, data)
    check_reply(rsp.status_code, rsp.headers.get("content-type", ""), rsp.content)


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes_body_gets_a_clear_400(server: ServerHandle, data: bytes) -> None:
    rsp = _post(server.url, "/chat/completions", data)
    check_reply(rsp.status_code, rsp.headers.get("content-type", ""), rsp.content)
    assert rsp.status_code in (200, 400)


# ---- headers --------------------------------------------------------------------------------

_value = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=30,
).map(str.strip)
_name = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-",
    min_size=1,
    max_size=12,
)
_host = st.one_of(
    st.sampled_from(["127.0.0.1", "localhost:8080", "[::1]", "evil.example", "", "127.0.0.1:x"]),
    _value,
)
_origin = st.one_of(
    st.sampled_from(["<absent>", "null", "http://localhost:3000", "http://evil.example", "x:"]),
    _value,
)
_type = st.one_of(
    st.sampled_from(
        ["application/json", "application/json; charset=utf-8", "text/plain", "<absent>"]
    ),
    _value,
)
_auth = st.one_of(st.sampled_from([f"Bearer {KEY}", "<absent>", "Bearer", "Basic eA=="]), _value)
_path = st.one_of(
    st.sampled_from(["/v1/chat/completions", "/v1/completions", "/v1/models", "/health"]),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20).map(
        lambda p: "/" + p
    ),
)


@st.composite
def _lengths(draw: st.DrawFn, size: int) -> list[str]:
    """Content-Length lines: the right one, none, several, or junk (never a number larger
    than the body: the server would rightly wait for the rest)."""
    right = str(size)
    junk = _value.filter(lambda v: not v.isascii() or not v.strip().isdigit())
    return draw(
        st.one_of(
            st.just([right]),
            st.just([]),
            st.lists(st.sampled_from([right, "0", "\u00b2"]), min_size=2, max_size=3),
            st.lists(junk, min_size=1, max_size=2),
        )
    )


@st.composite
def _raw_requests(draw: st.DrawFn) -> bytes:
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3})
    data = body.encode()
    fields: list[tuple[str, str]] = []
    for name, strategy in (("Host", _host), ("Origin", _origin), ("Content-Type", _type)):
        value = draw(strategy)
        if value != "<absent>":
            fields.append((name, value))
    auth = draw(_auth)
    if auth != "<absent>":
        fields.append(("Authorization", auth))
    fields += [("Content-Length", n) for n in draw(_lengths(len(data)))]
    fields += draw(st.lists(st.tuples(_name, _value), max_size=3))
    method = draw(st.sampled_from(["POST", "GET", "POST", "DELETE", "OPTIONS"]))
    head = f"{method} {draw(_path)} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields)
    return head.encode("latin-1") + b"\r\n" + (data if method == "POST" else b"")


@FUZZ
@given(request=_raw_requests())
def test_any_headers_get_a_clear_answer_and_never_a_500(
    keyed: ServerHandle, request: bytes
) -> None:
    status, kind, raw = exchange(keyed.port, request, timeout=30)
    check_reply(status, kind, raw)
