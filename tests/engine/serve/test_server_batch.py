"""Continuous batching in the local server: concurrent real HTTP clients on 127.0.0.1.

The server runs a tiny random llama GGUF (the bundled tokenizer; `bench.synth`) on the ONNX fast
path, so requests really share batched decode steps. Each concurrent stream must equal what
the same request gets alone (greedy token for token), whatever its neighbours ask for: other
sampling parameters, stop strings, a cancel mid-stream, a request joining a running batch.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from engine.serve.server import ServerHandle, serve_in_thread

PROMPTS = ["Hello there", "Tell me a story about a cat", "Why is the sky blue?", "Count: 1 2 3"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from bench.synth.core import write_tiny_model
    from engine.engine import Engine

    path = tmp_path_factory.mktemp("batch") / "tiny.gguf"
    write_tiny_model(path, "llama", "Q8_0")  # random weights, the bundled tokenizer
    engine = Engine(str(path), context_window=512)
    assert engine.info.backend == "onnx"
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def server(engine: Any) -> Iterator[ServerHandle]:
    with serve_in_thread(engine) as handle:
        yield handle


def _body(content: str, **fields: Any) -> bytes:
    fields.setdefault("temperature", 0)
    fields.setdefault("max_tokens", 24)
    messages = [{"role": "user", "content": content}]
    return json.dumps({"messages": messages, "stream": True, **fields}).encode()


def stream(server: ServerHandle, content: str, **fields: Any) -> tuple[str, str | None]:
    """(streamed text, finish_reason) of one streaming chat completion."""
    text, reason = [], None
    for chunk in _chunks(server, _body(content, **fields)):
        choice = chunk["choices"][0] if chunk.get("choices") else {}
        text.append(choice.get("delta", {}).get("content") or "")
        reason = choice.get("finish_reason") or reason
    return "".join(text), reason


def _chunks(server: ServerHandle, body: bytes, stop_after: int | None = None) -> Iterator[Any]:
    """The SSE chunks of one request; with ``stop_after``, hang up after that many."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        assert reply.status == 200, reply.read()
        seen = 0
        for line in reply:
            if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                continue
            yield json.loads(line[6:])
            seen += 1
            if stop_after is not None and seen >= stop_after:
                return
    finally:
        conn.close()  # a hang-up mid-stream: the server cancels that request


def concurrently(*calls: Any) -> list[Any]:
    """Run each zero-argument call on its own thread, all at once; their results in order."""
    results: list[Any] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(i: int) -> None:
        barrier.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    return results


@pytest.fixture(scope="module")
def solo(server: ServerHandle) -> list[tuple[str, str | None]]:
    return [stream(server, p) for p in PROMPTS]


def test_the_server_batches_on_the_fast_path(server: ServerHandle, solo: Any) -> None:
    assert server._server.worker.batching == ""


def test_concurrent_streams_equal_their_solo_greedy_replies(
    server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    together = concurrently(*[lambda p=p: stream(server, p) for p in PROMPTS])
    assert together == solo
    assert all(text for text, _ in solo)


def test_each_request_keeps_its_own_params_and_stop_strings(
    server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    text0 = solo[0][0]
    stop = text0[len(text0) // 2 : len(text0) // 2 + 3]  # a piece from the middle of reply 0
    sampled = {"temperature": 1.0, "seed": 7, "top_k": 20}
    calls = [
        lambda: stream(server, PROMPTS[0], stop=[stop]),
        lambda: stream(server, PROMPTS[1], max_tokens=5),
        lambda: stream(server, PROMPTS[2], **sampled),
        lambda: stream(server, PROMPTS[3]),
    ]
    stopped, short, drawn, plain = concurrently(*calls)
    assert stopped == (text0[: text0.index(stop)], "stop")
    assert short[1] == "length" and solo[1][0].startswith(short[0]) and short[0] != solo[1][0]
    assert drawn == stream(server, PROMPTS[2], **sampled)  # seeded: the same draw alone
    assert plain == solo[3]


def test_a_cancel_mid_stream_leaves_the_others_intact(
    server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    def hang_up() -> int:
        return len(list(_chunks(server, _body(PROMPTS[0], max_tokens=200), stop_after=3)))

    results = concurrently(hang_up, *[lambda p=p: stream(server, p) for p in PROMPTS[1:]])
    assert results[0] == 3
    assert results[1:] == solo[1:]
    assert stream(server, PROMPTS[0]) == solo[0]  # and the server still answers it afterwards


def test_a_request_joining_a_running_batch_gets_its_solo_reply(
    server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    first_chunk = threading.Event()
    ended: list[str] = []  # which request finished first

    def long_one() -> str:
        text = []
        for chunk in _chunks(server, _body(PROMPTS[1], max_tokens=400)):
            first_chunk.set()
            choice = chunk["choices"][0] if chunk.get("choices") else {}
            text.append(choice.get("delta", {}).get("content") or "")
        ended.append("long")
        return "".join(text)

    def joiner() -> tuple[str, str | None]:
        assert first_chunk.wait(120)
        reply = stream(server, PROMPTS[2])
        ended.append("joiner")
        return reply

    long_text, joined = concurrently(long_one, joiner)
    assert joined == solo[2]
    assert ended == ["joiner", "long"]  # it did not wait for the long reply to end
    assert long_text.startswith(solo[1][0])


def test_a_batched_row_equals_the_single_sequence_step(engine: Any) -> None:
    """The decoder's rows, at different lengths, are bitwise what the runner computes alone."""
    from engine.runners.batched import BatchedDecoder

    runner, decoder = engine.runner, BatchedDecoder(engine.runner, slots=3)
    prompts = [[5, 9, 200, 7], [11, 3, 3, 3, 3, 3, 40, 41, 42], [300, 301]]
    paired = getattr(runner, "paired_decode", None)
    runner.paired_decode = False  # a plain 1-token step, whatever the runner's default
    alone = []
    try:
        for prompt in prompts:
            runner.reset()
            runner.extend(prompt, last_only=True)
            alone.append(runner.extend([17], last_only=True)[0])  # numpy (Runner contract)
    finally:
        runner.reset()
        if paired is None:
            del runner.paired_decode
        else:
            runner.paired_decode = paired
    for slot, prompt in enumerate(prompts):
        decoder.prefill(slot, prompt)
    rows = decoder.decode([17, 17, 17])
    for row, single in zip(rows, alone, strict=True):
        assert np.array_equal(row, single)


def test_the_graph_cache_layout_has_a_batch_dimension(engine: Any) -> None:
    first = engine.runner.session.get_inputs()[0]
    assert first.name == "inputs_embeds" and first.shape[0] == "batch"


def test_a_repeated_prompt_reuses_a_cached_prefix_and_answers_the_same(
    server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    def usage_and_text() -> tuple[dict[str, Any], str]:
        chunks = list(_chunks(server, _body(PROMPTS[3], stream_options={"include_usage": True})))
        text = "".join(
            (c["choices"][0].get("delta", {}).get("content") or "") for c in chunks if c["choices"]
        )
        return chunks[-1]["usage"], text

    _usage, text = usage_and_text()
    again, text_again = usage_and_text()
    assert text == text_again == solo[3][0]
    cached = again["prompt_tokens_details"]["cached_tokens"]
    assert cached == again["prompt_tokens"] - 2  # all but the two tokens a prefill always runs


class Collect:
    """A job for the scheduler alone: keeps what it is given."""

    def __init__(self) -> None:
        self.cancel, self.items, self.ended = threading.Event(), list[Any](), False

    def emit(self, item: object) -> None:
        self.items.append(item)

    def end(self) -> None:
        self.ended = True


def scheduler(engine: Any, slots: int = 2) -> Any:
    from engine.runners.batched import BatchedDecoder
    from engine.serve.batch import BatchScheduler

    decoder = BatchedDecoder(engine.runner, slots)
    return BatchScheduler(decoder, engine.tokenizer, engine.eos_ids, lambda request: request)


def request(text: str, max_tokens: int = 8) -> Any:
    from engine.types import GenerationRequest, Message, SamplingParams

    params = SamplingParams(temperature=0, max_new_tokens=max_tokens)
    return GenerationRequest((Message("user", text),), params)


def test_a_long_prompt_is_prefilled_between_the_others_decode_steps(engine: Any) -> None:
    from engine.serve.batch import PREFILL_BUDGET
    from engine.types import TextDelta

    batch, talking, long = scheduler(engine), Collect(), Collect()
    batch.add(talking, request("Hi", max_tokens=100))
    batch.step()  # its prompt is prefilled, its first token sampled
    batch.add(long, request("word " * (3 * PREFILL_BUDGET)))
    rounds = 0
    while not any(isinstance(i, TextDelta) for i in long.items) and rounds < 20:
        before = len(batch.decoder.cached_ids(0))  # the talking request's slot
        batch.step()
        rounds += 1
        assert len(batch.decoder.cached_ids(0)) == before + 1  # a decode step every round
    assert rounds >= 3  # the long prompt took several rounds, none of them stalled the other
    assert not talking.ended


def test_a_finished_reply_leaves_only_its_prompt_cached(engine: Any) -> None:
    """Decode steps' K/V round differently from a prefill's: a slot keeps only what a prefill
    wrote, so the next turn of a conversation re-prefills the reply, as a cold start does."""
    batch, job = scheduler(engine), Collect()
    batch.add(job, request("Hi"))
    while batch.busy():
        batch.step()
    prepared, finished = job.items[0], job.items[-1]
    assert len(finished.token_ids) > 1
    assert len(batch.decoder.cached_ids(0)) == prepared.prompt_tokens


def test_an_idle_unload_drops_the_batch_and_the_next_request_reloads(
    engine: Any, server: ServerHandle, solo: list[tuple[str, str | None]]
) -> None:
    worker = server._server.worker
    assert stream(server, PROMPTS[0]) == solo[0]
    assert worker._batch is not None
    assert engine.unload()
    assert worker._batch is None  # the old runner and every slot's K/V are let go
    assert stream(server, PROMPTS[0]) == solo[0]  # reloaded, batched again, the same reply
    assert worker._batch is not None and worker._batch.decoder.runner is engine.runner


def test_a_stopped_server_lets_go_of_its_batch(engine: Any) -> None:
    listeners = len(engine.unload_listeners)
    with serve_in_thread(engine) as second:
        assert stream(second, PROMPTS[1], max_tokens=3)[1] == "length"
        assert len(engine.unload_listeners) == listeners + 1
        worker = second._server.worker
    assert len(engine.unload_listeners) == listeners  # nothing keeps its slots' K/V alive
    assert worker._batch is None
