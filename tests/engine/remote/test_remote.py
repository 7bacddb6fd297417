"""`RemoteEngine` against real HTTP: Hearth's own server on loopback, and raw socket servers
that misbehave on purpose (garbage mid-stream, 429, silence, a refused port)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import openai
import pytest

from engine.errors import BackendUnavailableError, InvalidParamsError, RemoteError
from engine.remote.backend import RemoteEngine, guess_kind, list_models, normalize_base_url
from engine.serve.server import serve_in_thread
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    SamplingParams,
    TextDelta,
)
from tests.engine.support.served import CannedServer, free_port, json_reply, sse_reply
from tests.engine.support.wrapping import WrappingBackend

KEY = "remote-test-key-7f3a9c21e5"
GREEDY = SamplingParams(temperature=0, max_new_tokens=12, top_k=0, min_p=0, repetition_penalty=1)


def ask(text: str = "Hello there", params: SamplingParams = GREEDY) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", text),), params=params)


def run(engine: RemoteEngine, request: GenerationRequest, cancel=None):  # type: ignore[no-untyped-def]
    events = list(engine.generate(request, cancel))
    assert isinstance(events[-1], Finished)
    return events


@pytest.fixture(scope="module")
def recorder(tiny_engine) -> WrappingBackend:  # type: ignore[no-untyped-def]
    return WrappingBackend(tiny_engine)


@pytest.fixture(scope="module")
def server(recorder: WrappingBackend):  # type: ignore[no-untyped-def]
    with serve_in_thread(recorder, api_key=KEY) as handle:
        yield handle


@pytest.fixture
def remote(server, tiny_engine):  # type: ignore[no-untyped-def]
    engine = RemoteEngine(server.url, tiny_engine.info.name, KEY)
    yield engine
    engine.close()


def test_streamed_text_equals_the_servers_non_streamed_reply(remote, server) -> None:  # type: ignore[no-untyped-def]
    events = run(remote, ask("Count to five"))
    finished = events[-1]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == finished.text
    assert finished.reason in (FinishReason.STOP, FinishReason.LENGTH)
    client = openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0)
    whole = client.chat.completions.create(
        model=remote.model,
        messages=[{"role": "user", "content": "Count to five"}],
        temperature=0,
        max_tokens=GREEDY.max_new_tokens,
    )
    assert finished.text == whole.choices[0].message.content
    assert finished.stats.prompt_tokens == whole.usage.prompt_tokens
    assert finished.stats.completion_tokens == whole.usage.completion_tokens


def test_probe_finds_the_kind_and_context_window(remote, tiny_engine) -> None:  # type: ignore[no-untyped-def]
    info = remote.probe()
    assert remote.kind == "hearth"
    assert info.context_window == tiny_engine.info.context_window
    assert {"top_k", "min_p", "repetition_penalty"} <= info.supported_params
    assert [m.id for m in list_models(remote.base_url, KEY)] == [tiny_engine.info.name]


def test_cancel_mid_stream_keeps_the_partial_reply_and_stops_the_server(remote, recorder) -> None:  # type: ignore[no-untyped-def]
    cancel = threading.Event()
    before = len(recorder.finished)
    texts = []
    params = SamplingParams(temperature=1.0, seed=1, max_new_tokens=100_000)
    for event in remote.generate(ask("Write a long essay.", params), cancel):
        if isinstance(event, TextDelta):
            texts.append(event.text)
            if len(texts) == 3:
                cancel.set()
        last = event
    assert isinstance(last, Finished) and last.reason == FinishReason.CANCELLED
    assert last.text == "".join(texts) and len(texts) == 3
    assert recorder.wait_for_finished(before + 1)
    assert recorder.finished[before].reason == FinishReason.CANCELLED  # the server stopped too


def test_a_refused_port_gives_a_clear_error() -> None:
    engine = RemoteEngine(f"http://127.0.0.1:{free_port()}/v1", "m", "some-key-value-1234")
    with pytest.raises(BackendUnavailableError, match="connection refused") as info:
        list(engine.generate(ask()))
    assert "some-key-value-1234" not in str(info.value)
    with pytest.raises(BackendUnavailableError, match="connection refused"):
        list_models(engine.base_url)


def test_wrong_key_is_401_and_never_echoed(server, tiny_engine) -> None:  # type: ignore[no-untyped-def]
    wrong = "sk-wrong-key-0123456789abcdef"
    engine = RemoteEngine(server.url, tiny_engine.info.name, wrong)
    with pytest.raises(RemoteError) as info:
        list(engine.generate(ask()))
    assert info.value.status == 401 and "rejected the API key" in str(info.value)
    assert wrong not in str(info.value) and wrong not in repr(engine)


def test_unknown_model_is_404(server) -> None:  # type: ignore[no-untyped-def]
    engine = RemoteEngine(server.url, "no-such-model", KEY)
    with pytest.raises(RemoteError, match="404") as info:
        list(engine.generate(ask()))
    assert info.value.status == 404 and "no-such-model" in str(info.value)
    with pytest.raises(RemoteError, match="not served"):
        engine.probe()


def test_garbage_mid_stream_ends_with_error_and_keeps_the_partial_text() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]}
    reply = sse_reply(f"data: {json.dumps(chunk)}\n\n", "data: {this is not json\n\n")
    with CannedServer(reply) as canned:
        events = run(RemoteEngine(canned.url, "m"), ask())
    finished = events[-1]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello"]
    assert finished.reason == FinishReason.ERROR and finished.text == "Hello"
    assert "malformed" in (finished.error or "")


def test_a_stream_cut_before_the_end_is_an_error_not_a_normal_stop() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Half"}, "finish_reason": None}]}
    with CannedServer(sse_reply(f"data: {json.dumps(chunk)}\n\n")) as canned:
        finished = run(RemoteEngine(canned.url, "m"), ask())[-1]
    assert finished.reason == FinishReason.ERROR and finished.text == "Half"


def test_an_error_event_mid_stream_is_reported() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    error = {"error": {"message": "out of memory", "type": "server_error"}}
    reply = sse_reply(f"data: {json.dumps(chunk)}\n\n", f"data: {json.dumps(error)}\n\n")
    with CannedServer(reply) as canned:
        finished = run(RemoteEngine(canned.url, "m"), ask())[-1]
    assert finished.reason == FinishReason.ERROR and "out of memory" in (finished.error or "")


def test_cancel_wakes_a_read_blocked_on_a_silent_server() -> None:
    """A server stuck mid-reply (say, a long prefill) sends nothing; Stop must not wait for
    the read timeout."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "Thinking"}, "finish_reason": None}]}
    head = sse_reply(f"data: {json.dumps(chunk)}\n\n")
    events: list[object] = []
    first, ended, cancel = threading.Event(), threading.Event(), threading.Event()
    with CannedServer(head, stall=True) as canned:
        engine = RemoteEngine(canned.url, "m", timeout=300)

        def consume() -> None:
            for event in engine.generate(ask(), cancel):
                events.append(event)
                first.set()
            ended.set()

        threading.Thread(target=consume, daemon=True).start()
        assert first.wait(60)
        time.sleep(0.5)  # let the consumer block in its next read (not an assertion on time)
        cancel.set()
        assert ended.wait(60), "cancel did not interrupt the blocked read"
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason == FinishReason.CANCELLED
    assert finished.text == "Thinking"


@pytest.mark.parametrize(
    "status, words",
    [
        ("429 Too Many Requests", "rate limiting (429): wait and retry"),
        ("403 Forbidden", "refused access (403)"),
        ("503 Service Unavailable", "failed with HTTP 503: Busy"),
    ],
)
def test_http_errors_say_what_to_do(status: str, words: str) -> None:
    body = json.dumps({"error": {"message": "Busy", "type": "requests"}})
    canned = CannedServer(json_reply(status, body))
    with canned, pytest.raises(RemoteError) as info:
        list(RemoteEngine(canned.url, "m").generate(ask()))
    assert words in str(info.value) and info.value.status == int(status.split()[0])


def test_a_masked_key_echoed_by_the_server_is_scrubbed() -> None:
    key = "sk-proj-abcdefgh12345678wxyz"
    body = json.dumps({"error": {"message": "Incorrect API key provided: sk-proj-********wxyz."}})
    canned = CannedServer(json_reply("400 Bad Request", body))
    with canned, pytest.raises(RemoteError) as info:
        list(RemoteEngine(canned.url, "m", key).generate(ask()))
    assert "wxyz" not in str(info.value) and "Incorrect API key" in str(info.value)


def test_a_silent_server_times_out() -> None:
    with CannedServer(None) as canned:
        engine = RemoteEngine(canned.url, "m", timeout=0.5)
        with pytest.raises(BackendUnavailableError, match="timeout"):
            list(engine.generate(ask()))


def test_request_body_sends_only_what_the_kind_honours() -> None:
    params = SamplingParams(temperature=0.3, top_k=5, seed=7, stop=("END",), max_new_tokens=9)
    vllm = RemoteEngine("http://gpu:8000", "m", kind="vllm").request_body(ask(params=params))
    assert vllm["top_k"] == 5 and vllm["repetition_penalty"] == params.repetition_penalty
    assert vllm["stop"] == ["END"] and vllm["seed"] == 7 and vllm["max_tokens"] == 9
    assert vllm["stream_options"] == {"include_usage": True}
    official = RemoteEngine("https://api.openai.com/v1", "gpt-4o-mini")
    body = official.request_body(ask(params=params))
    assert official.kind == "openai" and not {"top_k", "min_p", "repetition_penalty"} & set(body)
    assert "top_k" not in official.info.supported_params


def test_base_url_and_kind_guessing() -> None:
    assert normalize_base_url("http://gpu:8000/") == "http://gpu:8000/v1"
    assert normalize_base_url("https://host/openai/v1/") == "https://host/openai/v1"
    with pytest.raises(InvalidParamsError, match="http"):
        normalize_base_url("gpu:8000")
    assert guess_kind("http://localhost:11434/v1") == "ollama"
    assert guess_kind("http://gpu:8000/v1", "vllm") == "vllm"
    assert guess_kind("http://gpu:8000/v1", "me") == "generic"


def test_generate_cli_against_the_server(server, tiny_engine) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "HEARTH_TEST_KEY": KEY}
    argv = [sys.executable, "-m", "engine", "generate", "--base-url", server.url]
    argv += ["--model", tiny_engine.info.name, "--api-key-env", "HEARTH_TEST_KEY", "--json"]
    argv += ["--temperature", "0", "--max-tokens", "5", "--prompt", "Hello there"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["type"] == "done"
    text = "".join(line["text"] for line in lines if line["type"] == "delta")
    assert text == lines[-1]["text"] and lines[-1]["prompt_tokens"] > 0
    assert lines[-1]["finish_reason"] in ("stop", "length")
    assert KEY not in result.stdout + result.stderr
