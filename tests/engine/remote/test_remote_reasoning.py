"""A remote endpoint's thinking (``reasoning_content`` as DeepSeek and vLLM send it,
``reasoning`` as OpenRouter and Ollama do) arrives as `ReasoningDelta`s, apart from the answer,
over real HTTP on loopback."""

from __future__ import annotations

import json

from engine.remote.backend import RemoteEngine
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    ReasoningDelta,
    TextDelta,
)
from tests.engine.support.served import CannedServer, sse_reply


def _chunk(**delta: str) -> str:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    return f"data: {json.dumps(body)}\n\n"


def test_reasoning_content_streams_apart_from_the_answer() -> None:
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    reply = sse_reply(
        _chunk(role="assistant", content=""),
        _chunk(reasoning_content="Two plus "),
        _chunk(reasoning="two is four."),
        _chunk(content="4"),
        f"data: {json.dumps(done)}\n\n",
        "data: [DONE]\n\n",
    )
    with CannedServer(reply) as canned:
        request = GenerationRequest((Message("user", "2+2?"),))
        events = list(RemoteEngine(canned.url, "m").generate(request))
    thought = [e.text for e in events if isinstance(e, ReasoningDelta)]
    answer = [e.text for e in events if isinstance(e, TextDelta)]
    assert thought == ["Two plus ", "two is four."]
    assert answer == ["4"]
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason == FinishReason.STOP
    assert finished.text == "4"
