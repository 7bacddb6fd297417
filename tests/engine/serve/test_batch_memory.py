"""The server batch's K/V memory and fairness (issue 34, A7), on a real tiny model.

The decoder's buffers are measured in bytes (``BatchedDecoder.nbytes``), not timed: they grow
with the live sequences and the longest of them, never to slots x window up front, and shrink
when sequences leave. A request whose K/V would not fit the memory check is refused in one line
(or waits while others hold the memory). One client's 8 long prompts do not keep another
client's short request waiting: it is admitted, and answered, within a few rounds (counted).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engine.errors import InsufficientMemoryError
from engine.runners.batched import HEADROOM_BYTES, BatchedDecoder
from engine.runners.onnx_runner import CACHE_STEP
from engine.serve.batch import BatchScheduler
from engine.types import Finished, GenerationRequest, Message, SamplingParams, TextDelta


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from bench.synth.core import write_tiny_model
    from engine.engine import Engine

    path = tmp_path_factory.mktemp("batchmem") / "tiny.gguf"
    write_tiny_model(path, "llama", "Q8_0")  # random weights, the bundled tokenizer
    engine = Engine(str(path), context_window=512)
    assert engine.info.backend == "onnx"
    yield engine
    engine.close()


class Collect:
    """A job for the scheduler alone: keeps what it is given."""

    def __init__(self) -> None:
        self.cancel, self.items, self.ended = threading.Event(), list[Any](), False

    def emit(self, item: object) -> None:
        self.items.append(item)

    def end(self) -> None:
        self.ended = True

    def answered(self) -> bool:
        return any(isinstance(i, TextDelta | Finished) for i in self.items)


def request(text: str, max_tokens: int = 8) -> GenerationRequest:
    params = SamplingParams(temperature=0, max_new_tokens=max_tokens)
    return GenerationRequest((Message("user", text),), params)


def scheduler(engine: Any, slots: int = 8, **decoder: Any) -> BatchScheduler:
    batched = BatchedDecoder(engine.runner, slots, **decoder)
    return BatchScheduler(batched, engine.tokenizer, engine.eos_ids, lambda r: r)


def drain(batch: BatchScheduler, rounds: int = 2000) -> None:
    while batch.busy() and rounds:
        batch.step()
        rounds -= 1
    assert not batch.busy()


def test_kv_bytes_follow_the_live_sequences_not_the_slots(engine: Any) -> None:
    batch = scheduler(engine, slots=8)
    decoder = batch.decoder
    row = decoder.bytes_per_token
    assert decoder.nbytes == 1 * CACHE_STEP * row  # one row, one step: nothing sized 8 x window
    jobs = [Collect() for _ in range(3)]
    for job, text in zip(jobs, ["Hi", "Tell me a story", "Why?"], strict=True):
        batch.add(job, request(text, max_tokens=30), client="one")
    batch.step()
    assert batch.running() == 3
    longest = max(len(decoder.cached_ids(s)) for s in range(3))
    assert decoder.rows == 3  # three live sequences: three rows, not eight
    assert decoder.nbytes == 3 * decoder.capacity * row
    assert decoder.capacity <= max(CACHE_STEP, 2 * longest)
    drain(batch)
    assert all(isinstance(j.items[-1], Finished) for j in jobs)
    assert decoder.rows == 1  # they left: their rows went with them
    assert decoder.nbytes == decoder.capacity * row
    totals = [j.items[-1].stats.prompt_tokens + j.items[-1].stats.completion_tokens for j in jobs]
    step = CACHE_STEP
    assert decoder.peak_bytes <= 3 * max(step, -(-2 * max(totals) // step) * step) * row


def test_a_long_reply_grows_only_its_rows_length(engine: Any) -> None:
    batch = scheduler(engine, slots=8)
    job = Collect()
    batch.add(job, request("Count to a hundred", max_tokens=300), client="one")
    drain(batch)
    decoder, finished = batch.decoder, job.items[-1]
    assert isinstance(finished, Finished)
    total = finished.stats.prompt_tokens + finished.stats.completion_tokens
    assert decoder.peak_bytes <= 1 * 2 * max(total, CACHE_STEP) * decoder.bytes_per_token


def test_a_request_that_cannot_fit_is_refused_in_one_line(engine: Any) -> None:
    free = [1 << 40]  # what the memory check reads as available RAM, set once rows are known
    batch = scheduler(engine, slots=8, available=lambda: free[0])
    row = batch.decoder.bytes_per_token  # room for one row of 256 tokens, not of 512
    free[0] = HEADROOM_BYTES + int(1.1 * 300 * row)
    big = Collect()
    batch.add(big, request("Tell me everything", max_tokens=480), client="one")
    drain(batch)
    assert big.ended and len(big.items) == 1
    error = big.items[0]
    assert isinstance(error, InsufficientMemoryError)
    assert "cannot be served now" in str(error) and "MiB of RAM is available" in str(error)
    assert "\n" not in str(error)
    small = Collect()  # the batch still serves what fits
    batch.add(small, request("Hi", max_tokens=8), client="one")
    drain(batch)
    assert isinstance(small.items[-1], Finished)


def test_a_request_that_fits_only_alone_waits_for_the_others(engine: Any) -> None:
    free = [1 << 40]
    batch = scheduler(engine, slots=8, available=lambda: free[0])
    per_row = batch.decoder.bytes_per_token * 2 * CACHE_STEP
    free[0] = HEADROOM_BYTES + int(1.1 * per_row) + 1024  # one row of 2 steps, never two
    first, second = Collect(), Collect()
    batch.add(first, request("Hi", max_tokens=CACHE_STEP), client="one")
    batch.add(second, request("Why?", max_tokens=CACHE_STEP), client="two")
    batch.step()
    assert batch.running() == 1 and batch.waiting() == 1  # the second waits, not refused
    drain(batch)
    for job in (first, second):
        assert isinstance(job.items[-1], Finished), job.items[-1]


def test_one_clients_long_prompts_do_not_hold_another_clients_short_one(engine: Any) -> None:
    batch = scheduler(engine, slots=8)
    greedy = [Collect() for _ in range(8)]
    for i, job in enumerate(greedy):
        batch.add(job, request(f"{i} " + "word " * 300, max_tokens=150), client="greedy")
    batch.step()
    assert batch.running() < 8  # a lone client leaves a slot free for a newcomer
    short = Collect()
    batch.add(short, request("Hi", max_tokens=4), client="polite")
    rounds = 0
    while not short.answered() and rounds < 50:
        batch.step()
        rounds += 1
    assert short.answered()
    assert rounds <= 2  # admitted at once, its prompt prefilled ahead of the greedy ones
    while not short.ended and rounds < 50:
        batch.step()
        rounds += 1
    assert isinstance(short.items[-1], Finished) and rounds <= 6
    for job in greedy:
        job.cancel.set()
    drain(batch)
    assert batch.decoder.rows == 1


def test_api_error_for_memory_is_a_503() -> None:
    from engine.serve.replies import api_error

    error = api_error(InsufficientMemoryError("not enough memory for the batch"))
    assert error.status == 503 and "not enough memory" in error.message
