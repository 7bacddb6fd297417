"""Idle unload (issue 21 item 4): after the idle time the model's memory is returned, the
next message reloads it (reporting "Reloading ...") and answers as before, the live chat's
cache is saved first, and a request to the local server during the unload simply waits for
the reload."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from engine.engine import Engine
from engine.types import Finished, GenerationRequest, LoadProgress, Message, SamplingParams

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=8)
CHAT = (Message("user", "Name three colours."),)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reply(engine: Engine, conv: str) -> Finished:
    done = list(engine.generate(GenerationRequest(CHAT, GREEDY, conversation_id=conv)))[-1]
    assert isinstance(done, Finished)
    return done


def test_unload_returns_memory_and_the_next_message_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    reports: list[LoadProgress] = []
    engine = Engine("bundled", progress=reports.append, saved_caches_bytes=2**30)
    try:
        first = reply(engine, "chat")
        assert not engine.unload_if_idle(3600)  # used a moment ago
        engine.touch()  # what the server's batch does each round (no generate call)
        assert not engine.unload_if_idle(3600)
        loaded = rss_mb()
        dropped: list[bool] = []
        engine.unload_listeners.append(lambda: dropped.append(True))
        assert engine.unload_if_idle(0) and engine.unloaded and dropped
        # The ONNX session, its prepacked weights and the KV buffers are gone (bundled:
        # ~166 MB measured here with malloc_trim; an allocator keeps some, so a loose bound).
        assert rss_mb() < loaded - 40
        assert not engine.unload()  # already unloaded

        reports.clear()
        again = reply(engine, "chat")
        assert any(r.message.startswith("Reloading") for r in reports)
        assert reports[-1].stage == "ready" and not engine.unloaded
        assert again.token_ids == first.token_ids
        assert again.stats.cached_prompt_tokens > 0  # the chat's cache was saved on unload
    finally:
        engine.close()


def test_the_local_server_waits_for_the_reload(tmp_path: Path) -> None:
    from engine.serve.server import serve_in_thread

    engine = Engine("bundled")
    server = serve_in_thread(engine, "127.0.0.1", 0, None)
    try:
        assert engine.unload()
        body = {
            "model": "bundled",
            "messages": [{"role": "user", "content": "Name three colours."}],
            "temperature": 0,
            "max_tokens": 4,
        }
        request = urllib.request.Request(
            f"{server.url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.load(response)
        assert response.status == 200 and answer["choices"][0]["message"]["content"]
        assert not engine.unloaded
    finally:
        server.stop()
        engine.close()
