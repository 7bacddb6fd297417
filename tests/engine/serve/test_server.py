"""The local OpenAI-compatible server, driven by the official ``openai`` client over real HTTP.

The server runs on 127.0.0.1 (port 0) over the tiny random engine from the session fixture,
wrapped in a `WrappingBackend` so tests can see what the engine thread did; one end-to-end test uses
the bundled SmolLM2 (slow).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading

import httpx
import openai
import pytest

from engine.errors import InvalidParamsError
from engine.serve.server import check_bind, serve_in_thread
from engine.types import FinishReason
from tests.engine.support.wrapping import WrappingBackend

KEY = "test-server-key-4411"


@pytest.fixture(scope="module")
def recorder(tiny_engine) -> WrappingBackend:  # type: ignore[no-untyped-def]
    return WrappingBackend(tiny_engine)


@pytest.fixture(scope="module")
def server(recorder: WrappingBackend):  # type: ignore[no-untyped-def]
    with serve_in_thread(recorder, api_key=KEY) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=120)


def chat(client: openai.OpenAI, content: str = "Hello there", **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("temperature", 0)
    kw.setdefault("max_tokens", 12)
    messages = kw.pop("messages", [{"role": "user", "content": content}])
    return client.chat.completions.create(model=kw.pop("model", "x"), messages=messages, **kw)


@pytest.fixture(scope="module")
def model_id(client: openai.OpenAI) -> str:
    return client.models.list().data[0].id


def test_models_lists_the_served_model(client: openai.OpenAI, tiny_engine) -> None:  # type: ignore[no-untyped-def]
    models = client.models.list().data
    assert [m.id for m in models] == [tiny_engine.info.name]
    assert models[0].owned_by == "hearth"


def test_non_streamed_reply_has_text_reason_and_usage(client, model_id) -> None:  # type: ignore[no-untyped-def]
    reply = chat(client, model=model_id, max_tokens=6)
    choice = reply.choices[0]
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert reply.usage.prompt_tokens > 0
    assert 1 <= reply.usage.completion_tokens <= 6
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_streamed_text_equals_non_streamed_at_temperature_0(client, model_id) -> None:  # type: ignore[no-untyped-def]
    whole = chat(client, "Count to five", model=model_id).choices[0].message.content
    stream = chat(
        client, "Count to five", model=model_id, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] in ("stop", "length")
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens >= 1


def test_stream_ends_with_done(server) -> None:  # type: ignore[no-untyped-def]
    body = {"model": "", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    body["stream"] = True
    with httpx.Client(timeout=60) as http:
        rsp = http.post(f"{server.url}/chat/completions", json=body, headers=_auth())
    assert rsp.status_code == 200
    assert rsp.headers["content-type"].startswith("text/event-stream")
    assert rsp.text.rstrip().endswith("data: [DONE]")


def test_a_stop_string_cuts_the_reply_before_it(client, model_id) -> None:  # type: ignore[no-untyped-def]
    # Seeded sampling: the tiny random model's greedy text is only newlines.
    seeded = {"model": model_id, "max_tokens": 16, "temperature": 1.0, "seed": 3}
    full = chat(client, "Tell me a story", **seeded).choices[0].message.content
    visible = full.strip()
    assert len(visible) >= 4, f"need some text to cut, got {full!r}"
    stop = visible[2:4]
    reply = chat(client, "Tell me a story", stop=[stop], **seeded)
    assert reply.choices[0].message.content == full[: full.index(stop)]
    assert reply.choices[0].finish_reason == "stop"


def test_follow_up_turn_reports_cached_prompt_tokens(client, model_id) -> None:  # type: ignore[no-untyped-def]
    opening = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a colour of the sea."},
    ]
    first = chat(client, messages=opening, model=model_id, max_tokens=5)
    # Another conversation in between: its cache must not evict the first one's.
    chat(client, messages=[{"role": "user", "content": "Unrelated question?"}], model=model_id)
    follow = [
        *opening,
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And of the sky?"},
    ]
    second = chat(client, messages=follow, model=model_id, max_tokens=5)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= first.usage.prompt_tokens - 1
    assert cached < second.usage.prompt_tokens


def test_concurrent_clients_are_served_one_at_a_time_with_unchanged_results(
    client, model_id
) -> None:  # type: ignore[no-untyped-def]
    prompts = ["First question?", "Second question!", "Third one."]
    alone = [
        chat(client, p, model=model_id, max_tokens=8).choices[0].message.content for p in prompts
    ]
    together: dict[str, str] = {}

    def ask(prompt: str) -> None:
        stream = chat(client, prompt, model=model_id, max_tokens=8, stream=True)
        together[prompt] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [together[p] for p in prompts] == alone


def test_text_completion_endpoint(client, model_id) -> None:  # type: ignore[no-untyped-def]
    reply = client.completions.create(
        model=model_id, prompt="Once upon", max_tokens=4, temperature=0
    )
    assert reply.object == "text_completion" and isinstance(reply.choices[0].text, str)
    stream = client.completions.create(
        model=model_id, prompt="Once upon", max_tokens=4, temperature=0, stream=True
    )
    assert "".join(c.choices[0].text for c in stream if c.choices) == reply.choices[0].text


def test_wrong_or_missing_key_gets_401(server) -> None:  # type: ignore[no-untyped-def]
    wrong = openai.OpenAI(base_url=server.url, api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        wrong.models.list()
    assert info.value.status_code == 401 and "not-the-key" not in str(info.value)
    rsp = httpx.post(f"{server.url}/chat/completions", json={}, timeout=30)
    assert rsp.status_code == 401 and rsp.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(
    "body, words",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"messages": "hi"}).encode(), "messages must be"),
        (json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(), "role"),
        (
            json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": -5}).encode(),
            "max_tokens must be",
        ),
        (
            json.dumps(
                {"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}
            ).encode(),
            "temperature must be a number",
        ),
        (
            json.dumps({"messages": [{"role": "user", "content": "x"}], "top_p": 1.5}).encode(),
            "top_p must be in (0, 1]",
        ),
        (
            json.dumps({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}).encode(),
            "stream must be",
        ),
        (json.dumps({"messages": [{"role": "user", "content": "x"}], "n": 3}).encode(), "n=1"),
    ],
)
def test_bad_requests_get_400_and_the_server_keeps_serving(
    server, client, model_id, body, words
) -> None:  # type: ignore[no-untyped-def]
    rsp = httpx.post(
        f"{server.url}/chat/completions",
        content=body,
        headers={**_auth(), "Content-Type": "application/json"},
        timeout=30,
    )
    assert rsp.status_code == 400, rsp.text
    error = rsp.json()["error"]
    assert error["type"] == "invalid_request_error" and words in error["message"]
    assert chat(client, model=model_id, max_tokens=2).choices[0].message.content is not None


def test_a_prompt_longer_than_the_context_gets_400(client, model_id, tiny_engine) -> None:  # type: ignore[no-untyped-def]
    too_long = "word " * (tiny_engine.info.context_window + 50)
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, too_long, model=model_id)
    assert info.value.code == "context_length_exceeded"
    assert "context window" in info.value.message


def test_unknown_model_gets_404(client) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(openai.NotFoundError, match="not served here"):
        chat(client, model="gpt-9")


def test_a_client_that_hangs_up_cancels_its_generation(server, client, model_id, recorder) -> None:  # type: ignore[no-untyped-def]
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": "Write a very long essay."}],
            "max_tokens": 100_000,
            "stream": True,
            "temperature": 1.0,
        }
    ).encode()
    chat(client, model=model_id, max_tokens=1)  # FIFO: every earlier job has ended after this
    before = len(recorder.finished)
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + b"Content-Type: application/json\r\n"
            + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        while received.count(b"data: ") < 3:  # the role chunk and two text chunks
            more = sock.recv(4096)
            assert more, f"the server ended the reply early: {received[:300]!r}"
            received += more
    assert recorder.wait_for_finished(before + 1), "the generation did not stop"
    assert recorder.finished[before].reason == FinishReason.CANCELLED


def test_non_loopback_bind_needs_flag_and_key() -> None:
    check_bind("127.0.0.1", None, False)
    check_bind("::1", None, False)
    with pytest.raises(InvalidParamsError, match="--allow-remote"):
        check_bind("0.0.0.0", "k", False)
    with pytest.raises(InvalidParamsError, match="needs an API key"):
        check_bind("0.0.0.0", None, True)
    check_bind("0.0.0.0", "k", True)


def test_serve_cli_refuses_a_public_bind_before_loading_anything() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engine", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--allow-remote" in result.stderr


def _ignore_stop_signals() -> None:
    # As a script's background job (or a nohup-style wrapper) starts it: both signals ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@pytest.mark.slow  # a subprocess imports torch and loads the model: tens of seconds
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_cli_serves_until_interrupted_even_if_started_with_signals_ignored(
    tiny_model_dir, stop: signal.Signals
) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "HEARTH_API_KEY": KEY}  # the key stays out of the process list
    argv = [sys.executable, "-m", "engine", "serve", "--model", str(tiny_model_dir)]
    proc = subprocess.Popen(
        [*argv, "--port", "0", "--quiet"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_stop_signals,
    )
    tail: list[str] = []
    try:
        line = ""
        while "serving" not in line:
            line = proc.stderr.readline()  # type: ignore[union-attr]
            assert line or proc.poll() is None, "serve exited before serving"
        url = line.split(" at ", 1)[1].split()[0]
        # Keep reading stderr: a full pipe would block the server's logging (and its exit).
        drain = threading.Thread(target=lambda: tail.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
        drain.start()
        client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=120)
        model = client.models.list().data[0].id
        assert chat(client, model=model, max_tokens=3).choices[0].finish_reason
        client.close()
    finally:
        proc.send_signal(stop)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(
                f"serve did not stop on {stop.name}:\n" + "".join(tail[-40:])
            ) from None
        assert code == 0


@pytest.mark.slow
def test_bundled_model_end_to_end(bundled_engine) -> None:  # type: ignore[no-untyped-def]
    with serve_in_thread(bundled_engine) as handle:
        client = openai.OpenAI(base_url=handle.url, api_key="unused", max_retries=0, timeout=300)
        model = client.models.list().data[0].id
        question = [{"role": "user", "content": "What is the capital of France?"}]
        whole = chat(client, messages=question, model=model, max_tokens=24)
        text = "".join(
            c.choices[0].delta.content or ""
            for c in chat(client, messages=question, model=model, max_tokens=24, stream=True)
            if c.choices
        )
    assert text == whole.choices[0].message.content
    assert "Paris" in text


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}"}
