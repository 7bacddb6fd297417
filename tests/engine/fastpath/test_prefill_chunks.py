"""A dense fast-path graph prefills a long prompt in runs of `DENSE_PREFILL_CHUNK` tokens (its
activations grow with the run: ~105 MB for 512 tokens on a 0.5B, ~28 MB for 128), with the
numbers of one run: runs of >= 2 tokens agree bit for bit however a prompt is cut."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from engine.generate import generate
from engine.runners.onnx_runner import DENSE_PREFILL_CHUNK
from engine.types import Finished, GenerationRequest, Message, SamplingParams


@pytest.fixture(scope="module")
def bundled_fast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from engine.engine import Engine

    folder = tmp_path_factory.mktemp("prefill-chunks")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HEARTH_CACHE_DIR", str(folder / "cache"))
        engine = Engine("bundled")  # the fast path over the bundled Q4_1 file
        assert engine.info.backend == "onnx"
        yield engine
        engine.close()


def test_a_long_prompt_runs_in_chunks_with_the_numbers_of_one_run(bundled_fast: Any) -> None:
    runner = bundled_fast.runner
    assert runner.prefill_chunk == DENSE_PREFILL_CHUNK == 128
    ids = [(7 * i + 3) % 200 for i in range(300)]
    runner.reset()
    whole = runner.extend(ids, last_only=True)
    runner.reset()
    for start in (0, 128):
        runner.extend(ids[start : start + 128], last_only=True)
    chunked = runner.extend(ids[256:], last_only=True)
    assert np.array_equal(whole, chunked)


def test_generate_prefills_in_the_runners_chunks(bundled_fast: Any) -> None:
    runner, tok, eos = bundled_fast.runner, bundled_fast.tokenizer, bundled_fast.eos_ids
    text = " ".join(f"word{i % 37} and more" for i in range(80))  # ~400 tokens
    request = GenerationRequest(
        (Message("user", text),), SamplingParams(temperature=0.0, max_new_tokens=6)
    )

    runs: dict[int | None, tuple[Finished, list[int]]] = {}
    for chunk in (None, DENSE_PREFILL_CHUNK):
        runner.reset()
        runner.prefill_chunk, runner.extend_calls = chunk, []
        try:
            events = list(generate(runner, tok, request, eos_ids=eos))
            calls = list(runner.extend_calls)
        finally:
            runner.prefill_chunk, runner.extend_calls = DENSE_PREFILL_CHUNK, None
        assert isinstance(events[-1], Finished)
        runs[chunk] = (events[-1], [n for n in calls if n > 1])
    one, chunked = runs[None], runs[DENSE_PREFILL_CHUNK]
    prompt = one[0].stats.prompt_tokens
    assert prompt > 2 * DENSE_PREFILL_CHUNK
    assert one[1] == [prompt]  # the loop's default: one run up to 512 tokens
    assert max(chunked[1]) <= DENSE_PREFILL_CHUNK + 1 and sum(chunked[1]) == prompt
    assert chunked[0].token_ids == one[0].token_ids
