"""Remote engines get everything the local engine takes, in each server's own dialect.

Stand-in servers on loopback speak vLLM's, SGLang's and llama.cpp's dialects (their ``/models``
entries, ``reasoning`` as vLLM now names it or ``reasoning_content`` as the others do, tool-call
deltas) and record the request body, so a test sees what crossed the wire.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.remote.backend import RemoteEngine
from engine.serve.schema import ApiError, parse_request
from engine.types import (
    Finished,
    GenerationRequest,
    Message,
    ReasoningDelta,
    ResponseFormat,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)

DIALECTS: dict[str, dict[str, Any]] = {
    "vllm": {"model": {"owned_by": "vllm", "max_model_len": 32768}, "thought": "reasoning"},
    "sglang": {"model": {"owned_by": "sglang"}, "thought": "reasoning_content"},
    "llamacpp": {
        "model": {"owned_by": "llamacpp", "meta": {"n_ctx_train": 40960}},
        "thought": "reasoning_content",
    },
}


def _sse(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


@contextmanager
def stand_in(dialect: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A server speaking ``dialect``; yields its base URL and the request bodies it received."""
    spec, bodies = DIALECTS[dialect], []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest's output clean
            pass

        def _send(self, status: int, ctype: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            entry = {"id": "qwen3", "object": "model", **spec["model"]}
            self._send(200, "application/json", json.dumps({"data": [entry]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            function = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
            call = {"index": 0, "id": "call_1", "type": "function", "function": function}
            stream = b"".join([
                _sse({"role": "assistant", "content": ""}),
                _sse({spec["thought"]: "The user wants weather. "}),
                _sse({"content": "Checking."}),
                _sse({"tool_calls": [call]}),
                _sse({}, "tool_calls"),
                b"data: [DONE]\n\n",
            ])  # fmt: skip
            self._send(200, "text/event-stream", stream)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    finally:
        server.shutdown()
        server.server_close()


WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city",
    parameters='{"type": "object", "properties": {"city": {"type": "string"}}}',
)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_remote_engine_sends_everything_and_reads_the_reply(dialect: str) -> None:
    request = GenerationRequest(
        (Message("user", "Weather in Paris?"),),
        thinking=False,
        tools=(WEATHER,),
        tool_choice="required",
        response_format=ResponseFormat(kind="json_object"),
    )
    with stand_in(dialect) as (url, bodies):
        engine = RemoteEngine(url, "qwen3")
        info = engine.probe()
        events = list(engine.generate(request))
        engine.close()
    assert engine.kind == dialect
    sent = bodies[0]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    assert sent["tool_choice"] == "required"
    assert sent["response_format"] == {"type": "json_object"}
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert thought == "The user wants weather. " and answer == "Checking."
    assert any(isinstance(e, ToolCallDelta) for e in events)
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.tool_calls
    assert finished.tool_calls[0].name == "get_weather"
    if dialect != "sglang":  # SGLang's /models says nothing of the window
        assert info.context_window > 0


def test_thinking_left_unset_sends_no_template_arguments() -> None:
    with stand_in("vllm") as (url, bodies):
        engine = RemoteEngine(url, "qwen3", kind="vllm")
        list(engine.generate(GenerationRequest((Message("user", "hi"),))))
        engine.close()
    assert "chat_template_kwargs" not in bodies[0]


def test_an_ollama_endpoint_gets_its_own_think_field() -> None:
    request = GenerationRequest((Message("user", "hi"),), thinking=True)
    body = RemoteEngine("http://127.0.0.1:11434", "qwen3").request_body(request)
    assert body["think"] is True and "chat_template_kwargs" not in body


def test_the_local_server_reads_chat_template_kwargs() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}],
            "chat_template_kwargs": {"enable_thinking": False}}  # fmt: skip
    assert parse_request(body, chat=True).generation.thinking is False
    body["chat_template_kwargs"] = {"enable_thinking": "no"}
    with pytest.raises(ApiError, match="enable_thinking must be true or false"):
        parse_request(body, chat=True)
