"""The generate loop on a tiny random Llama: parity with transformers, KV cache, prefix reuse,
cancel, live params, stop strings, EOS, max tokens, a full context window."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import torch

from engine.errors import ContextOverflowError
from engine.generate import generate
from engine.runners.torch_runner import TorchRunner
from engine.text import fit_context
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    ParamsApplied,
    PromptPrepared,
    SamplingParams,
    TextDelta,
)

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=24)
CHAT = (Message("system", "Be brief."), Message("user", "Name three colours."))


def run(engine: Any, request: GenerationRequest, **kwargs: Any) -> tuple[list[Any], Finished]:
    events = list(engine.generate(request, **kwargs))
    assert isinstance(events[0], PromptPrepared)
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    return events, events[-1]


def fresh_runner(engine: Any, context_window: int | None = None) -> TorchRunner:
    ctx = context_window or engine.info.context_window
    return TorchRunner(engine.loaded.model, context_window=ctx)


def hf_greedy(engine: Any, prompt_ids: list[int], max_new: int) -> list[int]:
    """transformers generate(do_sample=False) on the same weights, cut before the first EOS."""
    model = engine.loaded.model
    input_ids = torch.tensor([prompt_ids])
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=False,
            max_new_tokens=max_new,
            eos_token_id=sorted(engine.eos_ids),
            pad_token_id=2,
        )
    ids = out[0, len(prompt_ids) :].tolist()
    for i, t in enumerate(ids):
        if t in engine.eos_ids:
            return ids[:i]
    return ids


def test_greedy_equals_transformers_generate(tiny_engine: Any) -> None:
    request = GenerationRequest(CHAT, GREEDY)
    events, done = run(tiny_engine, request)
    prompt = fit_context(
        tiny_engine.tokenizer, CHAT, context_window=1024, reserve_tokens=GREEDY.max_new_tokens
    ).ids
    assert list(done.token_ids) == hf_greedy(tiny_engine, list(prompt), GREEDY.max_new_tokens)
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == done.text
    assert done.stats.prompt_tokens == len(prompt)


def test_kv_cached_logits_equal_recompute(tiny_engine: Any) -> None:
    ids = tiny_engine.tokenize("The quick brown fox jumps over the lazy dog")
    full = fresh_runner(tiny_engine).extend(ids)  # (T, V), one pass; numpy
    stepwise = fresh_runner(tiny_engine)
    rows = [stepwise.extend(ids[:5])[-1]] + [stepwise.extend([t])[0] for t in ids[5:]]
    np.testing.assert_allclose(np.stack(rows), full[4:], rtol=1e-4, atol=1e-4)
    # crop() then re-extend gives the same logits as never having gone further
    stepwise.crop(6)
    np.testing.assert_allclose(stepwise.extend(ids[6:7])[0], full[6], rtol=1e-4, atol=1e-4)


def test_turn_two_reuses_the_prefix_and_matches_a_fresh_prefill(tiny_engine: Any) -> None:
    runner = fresh_runner(tiny_engine)
    tok, eos = tiny_engine.tokenizer, tiny_engine.eos_ids
    first = list(generate(runner, tok, GenerationRequest(CHAT, GREEDY), eos_ids=eos))[-1]
    # The tiny model's gibberish reply need not re-tokenize to the same ids, so turn 2 carries
    # a written reply: the whole turn-1 prompt is then a shared prefix.
    turn2 = (*CHAT, Message("assistant", "Red, green and blue."), Message("user", "More?"))
    runner.extend_calls = []  # opt in to counting forwards
    reused = list(generate(runner, tok, GenerationRequest(turn2, GREEDY), eos_ids=eos))[-1]
    stats = reused.stats
    assert stats.cached_prompt_tokens == first.stats.prompt_tokens
    assert runner.extend_calls[0] == stats.prompt_tokens - stats.cached_prompt_tokens
    assert runner.extend_calls[1:] == [1] * (len(runner.extend_calls) - 1)  # decode steps
    fresh_run = generate(
        fresh_runner(tiny_engine), tok, GenerationRequest(turn2, GREEDY), eos_ids=eos
    )
    fresh = list(fresh_run)[-1]
    assert fresh.stats.cached_prompt_tokens == 0
    assert fresh.token_ids == reused.token_ids


def test_cancel_stops_within_one_token(tiny_engine: Any) -> None:
    cancel = threading.Event()
    stream = tiny_engine.generate(
        GenerationRequest(CHAT, GREEDY.replace(max_new_tokens=200)), cancel
    )
    seen = 0
    for event in stream:
        if isinstance(event, TextDelta):
            seen = event.token_index
            cancel.set()
        if isinstance(event, Finished):
            break
    assert event.reason == FinishReason.CANCELLED
    assert seen > 0 and event.stats.completion_tokens == seen


def test_live_params_apply_from_the_next_token(tiny_engine: Any) -> None:
    live = LiveParams(GREEDY.replace(max_new_tokens=200))
    applied: list[ParamsApplied] = []
    changed_at = None
    for event in tiny_engine.generate(GenerationRequest(CHAT, live.get()), live=live):
        if isinstance(event, TextDelta) and changed_at is None and event.token_index >= 3:
            changed_at = event.token_index
            live.set(live.get().replace(max_new_tokens=changed_at + 2))
        elif isinstance(event, ParamsApplied):
            applied.append(event)
        elif isinstance(event, Finished):
            done = event
    assert changed_at is not None
    assert [a.token_index for a in applied] == [changed_at]
    assert done.reason == FinishReason.LENGTH
    assert done.stats.completion_tokens == changed_at + 2


def test_stop_string_is_never_emitted(tiny_engine: Any) -> None:
    _, plain = run(tiny_engine, GenerationRequest(CHAT, GREEDY))
    text = plain.text
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    assert len(stop) == 3 and stop.strip(), f"tiny model text too short: {text!r}"
    events, done = run(tiny_engine, GenerationRequest(CHAT, GREEDY.replace(stop=(stop,))))
    assert done.reason == FinishReason.STOP
    assert done.text == text[: text.find(stop)]
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == done.text and stop not in deltas


def test_eos_ends_with_stop_and_is_not_in_the_ids(tiny_engine: Any) -> None:
    _, plain = run(tiny_engine, GenerationRequest(CHAT, GREEDY))
    ids = plain.token_ids
    cut = next(i for i, t in enumerate(ids) if t not in ids[:i] and i > 0)
    # Declare a later greedy token an end-of-turn id: the loop must stop right there.
    events = list(
        generate(
            fresh_runner(tiny_engine),
            tiny_engine.tokenizer,
            GenerationRequest(CHAT, GREEDY),
            eos_ids={ids[cut], 2},
        )
    )
    done = events[-1]
    assert done.reason == FinishReason.STOP
    assert done.token_ids == ids[:cut]
    assert done.stats.completion_tokens == cut + 1


def test_max_tokens_finishes_with_length(tiny_engine: Any) -> None:
    _, done = run(tiny_engine, GenerationRequest(CHAT, GREEDY.replace(max_new_tokens=5)))
    assert done.reason == FinishReason.LENGTH
    assert len(done.token_ids) == 5 == done.stats.completion_tokens


def test_full_context_window_finishes_with_length(tiny_engine: Any) -> None:
    runner = fresh_runner(tiny_engine, context_window=64)
    request = GenerationRequest(CHAT, GREEDY.replace(max_new_tokens=500))
    done = list(generate(runner, tiny_engine.tokenizer, request, eos_ids={2}))[-1]
    assert done.reason == FinishReason.LENGTH
    assert done.stats.prompt_tokens + done.stats.completion_tokens == 64


def test_prompt_that_cannot_fit_raises_context_overflow(tiny_engine: Any) -> None:
    runner = fresh_runner(tiny_engine, context_window=64)
    request = GenerationRequest((Message("user", "word " * 200),), GREEDY)
    with pytest.raises(ContextOverflowError, match=r"\d"):
        list(generate(runner, tiny_engine.tokenizer, request, eos_ids={2}))


def test_identical_prompt_reuses_all_but_its_last_token(tiny_engine: Any) -> None:
    """Regenerate: the whole prompt is cached, yet one token is re-run to get fresh logits."""
    runner = fresh_runner(tiny_engine)
    tok, eos = tiny_engine.tokenizer, tiny_engine.eos_ids
    first = list(generate(runner, tok, GenerationRequest(CHAT, GREEDY), eos_ids=eos))[-1]
    runner.extend_calls = []  # opt in to counting forwards
    again = list(generate(runner, tok, GenerationRequest(CHAT, GREEDY), eos_ids=eos))[-1]
    assert again.stats.cached_prompt_tokens == again.stats.prompt_tokens - 1
    assert runner.extend_calls[0] == 1
    assert again.token_ids == first.token_ids


def test_presence_and_frequency_penalties_steer_the_reply_away_from_repeats(
    tiny_engine: Any,
) -> None:
    plain = run(tiny_engine, GenerationRequest(CHAT, GREEDY))[1].token_ids
    assert len(set(plain)) < len(plain) / 2  # the random tiny model repeats itself
    for change in ({"presence_penalty": 2.0}, {"frequency_penalty": 2.0}):
        penalised = run(tiny_engine, GenerationRequest(CHAT, GREEDY.replace(**change)))[1]
        assert len(set(penalised.token_ids)) > len(set(plain)), change
