"""End to end on the bundled SmolLM2-135M (slow): float32 greedy ids equal transformers
generate(do_sample=False) on the same weights and templated prompt; a real second turn reuses
the whole first turn from the cache; EOS ends a real reply."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.text import fit_context
from engine.types import Finished, FinishReason, GenerationRequest, Message, SamplingParams

pytestmark = pytest.mark.slow

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=32)
QUESTION = (Message("user", "What is the capital of France? Answer in one sentence."),)


def reply(engine: Any, request: GenerationRequest) -> Finished:
    event = list(engine.generate(request))[-1]
    assert isinstance(event, Finished)
    return event


def test_bundled_greedy_equals_transformers_and_stops_at_eos(bundled_engine: Any) -> None:
    done = reply(bundled_engine, GenerationRequest(QUESTION, GREEDY))
    assert done.reason == FinishReason.STOP  # a real end-of-turn, not max tokens
    assert "Paris" in done.text
    prompt = fit_context(
        bundled_engine.tokenizer, QUESTION, context_window=8192, reserve_tokens=32
    ).ids
    input_ids = torch.tensor([list(prompt)])
    with torch.inference_mode():
        out = bundled_engine.loaded.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=False,
            max_new_tokens=32,
            eos_token_id=sorted(bundled_engine.eos_ids),
            pad_token_id=2,
        )
    expected = out[0, len(prompt) :].tolist()
    assert expected[-1] in bundled_engine.eos_ids
    assert list(done.token_ids) == expected[:-1]


def test_bundled_second_turn_reuses_the_whole_first_turn(bundled_engine: Any) -> None:
    first = reply(bundled_engine, GenerationRequest(QUESTION, GREEDY, conversation_id="parity"))
    turn2 = (*QUESTION, Message("assistant", first.text), Message("user", "And of Italy?"))
    second = reply(bundled_engine, GenerationRequest(turn2, GREEDY, conversation_id="parity"))
    # Prompt 1 and the reply (without its EOS, which was never fed back) came from the cache.
    assert second.stats.cached_prompt_tokens == first.stats.prompt_tokens + len(first.token_ids)
    assert "Rome" in second.text
    bundled_engine.runner.reset()  # the same turn from scratch gives the same reply
    fresh = reply(bundled_engine, GenerationRequest(turn2, GREEDY, conversation_id="fresh"))
    assert fresh.stats.cached_prompt_tokens == 0
    assert fresh.token_ids == second.token_ids


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bundled_on_cuda_defaults_to_bfloat16() -> None:
    from engine.engine import Engine

    engine = Engine("bundled")
    try:
        assert engine.info.device.startswith("cuda") and engine.info.dtype == "bfloat16"
        done = reply(engine, GenerationRequest(QUESTION, GREEDY))
        assert done.reason == FinishReason.STOP and "Paris" in done.text
    finally:
        engine.close()
