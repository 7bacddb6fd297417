"""Sampling: exact expectations on hand-made logits, parity with transformers' logits
processors on random logits, and seeded reproducibility of the draw. The sampler is numpy;
torch appears here only to run transformers' processors as the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from engine.sampling import (
    apply_grammar_mask,
    apply_min_p,
    apply_presence_frequency_penalties,
    apply_repetition_penalty,
    apply_temperature,
    make_generator,
    process_logits,
    sample_next_token,
)
from engine.types import SamplingParams

INF = float("inf")
NO_FILTERS = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0)


def t(values: list[float]) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def ids(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def apply_top_k(logits: np.ndarray, top_k: int) -> np.ndarray:
    """Top-k alone, through the hot path (`process_logits` gathers survivors, then scatters)."""
    return process_logits(logits, NO_FILTERS.replace(top_k=top_k), ids([]))


def apply_top_p(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Top-p alone, through the hot path."""
    return process_logits(logits, NO_FILTERS.replace(top_p=top_p), ids([]))


# --- hand-made distributions, exact expectations ---------------------------------------------


def test_repetition_penalty_divides_positive_and_multiplies_negative() -> None:
    out = apply_repetition_penalty(t([2.0, -2.0, 3.0, -1.0]), ids([0, 1, 1, 0]), 2.0)
    assert out.tolist() == [1.0, -4.0, 3.0, -1.0]


def test_repetition_penalty_is_a_noop_at_one_or_without_history() -> None:
    logits = t([2.0, -2.0])
    assert apply_repetition_penalty(logits, ids([0, 1]), 1.0) is logits
    assert apply_repetition_penalty(logits, ids([]), 1.3) is logits


def test_repetition_penalty_below_one_rewards_repeats() -> None:
    out = apply_repetition_penalty(t([2.0, -2.0, 1.0]), ids([0, 1]), 0.5)
    assert out.tolist() == [4.0, -1.0, 1.0]


def test_repetition_penalty_does_not_mutate_its_input() -> None:
    logits = t([2.0, 4.0])
    apply_repetition_penalty(logits, ids([1]), 2.0)
    assert logits.tolist() == [2.0, 4.0]


def test_temperature_scales_and_zero_keeps_only_the_argmax() -> None:
    assert apply_temperature(t([1.0, 2.0]), 0.5).tolist() == [2.0, 4.0]
    assert apply_temperature(t([1.0, 3.0, 2.0]), 0.0).tolist() == [-INF, 3.0, -INF]
    logits = t([1.0, 2.0])
    assert apply_temperature(logits, 1.0) is logits


def test_top_k_keeps_k_largest() -> None:
    out = apply_top_k(t([1.0, 5.0, 3.0, 4.0, 2.0]), 2)
    assert out.tolist() == [-INF, 5.0, -INF, 4.0, -INF]


def test_top_k_keeps_ties_with_the_kth_like_transformers() -> None:
    assert apply_top_k(t([3.0, 1.0, 3.0, 2.0]), 1).tolist() == [3.0, -INF, 3.0, -INF]


def test_top_k_zero_or_at_least_vocab_is_a_noop() -> None:
    logits = t([1.0, 2.0, 3.0])
    for k in (0, 3, 10):
        assert apply_top_k(logits, k).tolist() == logits.tolist()


def test_top_p_keeps_the_smallest_nucleus_reaching_p() -> None:
    logits = np.log(t([0.5, 0.3, 0.15, 0.05]))
    kept = lambda p: np.isfinite(apply_top_p(logits, p)).tolist()  # noqa: E731
    assert kept(0.5) == [True, False, False, False]  # mass above #2 is 0.5, not < 0.5
    assert kept(0.6) == [True, True, False, False]
    assert kept(0.85) == [True, True, True, False]  # 0.8 < 0.85 keeps the third
    assert kept(0.96) == [True, True, True, True]
    assert kept(1e-9) == [True, False, False, False]  # the top token always survives


def test_top_p_keeps_kept_values_unchanged() -> None:
    logits = np.log(t([0.1, 0.6, 0.3]))
    out = apply_top_p(logits, 0.7)
    assert out[1] == logits[1] and out[2] == logits[2] and out[0] == -INF


def test_top_p_one_is_a_noop() -> None:
    logits = t([1.0, 2.0])
    assert apply_top_p(logits, 1.0).tolist() == logits.tolist()


def test_top_p_widens_beyond_its_first_guess_on_a_flat_vocabulary() -> None:
    logits = np.zeros(5000, dtype=np.float32)  # uniform: mass above #2501 is 0.5000, #2502 0.5002
    assert int(np.isfinite(apply_top_p(logits, 0.5001)).sum()) == 2501


def test_min_p_drops_tokens_below_fraction_of_top_probability() -> None:
    logits = np.log(t([0.5, 0.3, 0.15, 0.05]))
    out = apply_min_p(logits, 0.2)  # threshold 0.1: drops only 0.05
    assert np.isfinite(out).tolist() == [True, True, True, False]
    assert np.isfinite(apply_min_p(logits, 0.99)).tolist() == [True, False, False, False]


def test_min_p_zero_is_a_noop() -> None:
    logits = t([1.0, 2.0])
    assert apply_min_p(logits, 0.0) is logits


def test_every_filter_keeps_at_least_one_token_on_a_peaked_distribution() -> None:
    logits = t([0.0, 100.0, 0.0])
    for out in (apply_top_k(logits, 1), apply_top_p(logits, 1e-6), apply_min_p(logits, 0.999)):
        assert np.isfinite(out).tolist() == [False, True, False]


def test_process_logits_applies_the_documented_order() -> None:
    # Penalty first: token 0 (logit 4, seen) falls to 2 below token 1 (3), so top-k=1 keeps 1.
    params = SamplingParams(temperature=0.5, top_k=1, top_p=1.0, min_p=0.0, repetition_penalty=2.0)
    out = process_logits(t([4.0, 3.0, 1.0]), params, ids([0]))
    assert out.tolist() == [-INF, 6.0, -INF]


def test_process_logits_accepts_half_precision_and_returns_float32() -> None:
    out = process_logits(t([1.0, 2.0, 3.0]).astype(np.float16), NO_FILTERS, ids([]))
    assert out.dtype == np.float32 and out.tolist() == [1.0, 2.0, 3.0]


def test_torch_tensors_and_lists_are_accepted_as_numpy() -> None:
    """A torch Runner's logits (or a list of history ids) give what numpy gives."""
    logits = np.random.default_rng(4).standard_normal(300).astype(np.float32) * 3
    history = [5, 7, 7, 250]
    params = SamplingParams(repetition_penalty=1.3, frequency_penalty=0.2)
    expected = process_logits(logits, params, ids(history), 2)
    assert np.array_equal(process_logits(torch.from_numpy(logits), params, history, 2), expected)
    draws = [
        sample_next_token(x, params, h, make_generator(3), 2)
        for x, h in ((logits, ids(history)), (torch.from_numpy(logits), torch.tensor(history)))
    ]
    assert draws[0] == draws[1]


def test_grammar_mask_takes_a_numpy_bool_array() -> None:
    out = apply_grammar_mask(t([1.0, 2.0, 3.0]), np.array([True, False, True]))
    assert out.tolist() == [1.0, -INF, 3.0]
    assert apply_grammar_mask(t([1.0]), None).tolist() == [1.0]


# --- parity with transformers on random logits ----------------------------------------------


def _transformers_processors(p: SamplingParams, upto: str = "min_p") -> LogitsProcessorList:
    """The same steps, in the same order, as transformers' own processors (through ``upto``)."""
    steps = LogitsProcessorList()
    for name, on, make in [
        ("repetition", p.repetition_penalty != 1.0, RepetitionPenaltyLogitsProcessor),
        ("temperature", p.temperature != 1.0, TemperatureLogitsWarper),
        ("top_k", p.top_k > 0, TopKLogitsWarper),
        ("top_p", p.top_p < 1.0, TopPLogitsWarper),
        ("min_p", p.min_p > 0.0, MinPLogitsWarper),
    ]:
        value = {"repetition": p.repetition_penalty, "temperature": p.temperature}.get(
            name, getattr(p, name, None)
        )
        if on:
            steps.append(make(value))
        if name == upto:
            return steps
    return steps


def _transformers(
    params: SamplingParams, logits: np.ndarray, history: np.ndarray, upto: str = "min_p"
) -> np.ndarray:
    """transformers' processors (through ``upto``) on numpy inputs, as numpy float32 (V,)."""
    steps = _transformers_processors(params, upto)
    out = steps(torch.from_numpy(history)[None, :], torch.from_numpy(logits.copy())[None, :])
    return out[0].numpy()


def _softmax64(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - np.max(x))
    return e / e.sum()


def _on_a_float_boundary(token: int, params, logits, history) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``token``'s keep/drop decision is within float32 rounding of a threshold.

    transformers sums top-p probabilities in float32; near top_p -> 1 that sum is off by ~1e-7,
    so a token whose exact (float64) mass-above sits that close to top_p may go either way.
    """
    if params.top_p < 1.0:
        probs = _softmax64(_transformers(params, logits, history, "top_k"))
        mass_above = float(probs[probs > probs[token]].sum())
        if abs(mass_above - params.top_p) < 1e-5:
            return True
    if params.min_p > 0.0:
        probs = _softmax64(_transformers(params, logits, history, "top_p"))
        if abs(float(probs[token] / probs.max()) - params.min_p) < 1e-5:
            return True
    return False


PARITY_SETTINGS = [
    SamplingParams(),  # the app's defaults: every step on
    SamplingParams(temperature=1.3, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.2),
    SamplingParams(temperature=0.6, top_k=200, top_p=1.0, min_p=0.1, repetition_penalty=1.0),
    SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.02, repetition_penalty=0.8),
    SamplingParams(temperature=2.0, top_k=5, top_p=0.5, min_p=0.0, repetition_penalty=1.5),
    SamplingParams(temperature=0.9, top_k=0, top_p=0.999, min_p=0.0, repetition_penalty=1.0),
]


@pytest.mark.parametrize("params", PARITY_SETTINGS, ids=lambda p: repr(p.to_dict()))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_distribution_equals_transformers_logits_processors(params, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    vocab = 4096
    logits = (rng.standard_normal(vocab) * 3).astype(np.float32)  # (V,)
    history = rng.integers(0, vocab, 300)  # prompt + generated ids
    expected = _transformers(params, logits, history)
    ours = process_logits(logits, params, history)
    differ = np.flatnonzero(np.isfinite(ours) != np.isfinite(expected)).tolist()
    assert len(differ) <= 1
    assert all(_on_a_float_boundary(i, params, logits, history) for i in differ)
    atol = 1e-5 if differ else 1e-7  # a boundary token holds ~1e-6 of the mass
    np.testing.assert_allclose(_softmax64(ours), _softmax64(expected), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("step", ["repetition", "temperature", "top_k", "top_p", "min_p"])
def test_each_step_alone_equals_its_transformers_processor(step) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal(49152) * 4).astype(np.float32)  # SmolLM2's vocabulary size
    history = rng.integers(0, 49152, 50)
    ours, theirs = {
        "repetition": (
            lambda x: apply_repetition_penalty(x, history, 1.3),
            RepetitionPenaltyLogitsProcessor(1.3),
        ),
        "temperature": (lambda x: apply_temperature(x, 0.7), TemperatureLogitsWarper(0.7)),
        "top_k": (lambda x: apply_top_k(x, 50), TopKLogitsWarper(50)),
        "top_p": (lambda x: apply_top_p(x, 0.8), TopPLogitsWarper(0.8)),
        "min_p": (lambda x: apply_min_p(x, 0.05), MinPLogitsWarper(0.05)),
    }[step]
    expected = theirs(torch.from_numpy(history)[None, :], torch.from_numpy(logits.copy())[None, :])
    expected = expected[0].numpy()
    got = ours(logits)
    assert np.array_equal(np.isfinite(got), np.isfinite(expected))
    np.testing.assert_allclose(_softmax64(got), _softmax64(expected), rtol=1e-5, atol=1e-8)


# --- the draw ---------------------------------------------------------------------------------


def _draws(params: SamplingParams, seed: int | None, n: int = 20) -> list[int]:
    logits = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    generator = make_generator(seed)
    return [sample_next_token(logits, params, ids([1, 2]), generator) for _ in range(n)]


def test_seeded_runs_reproduce_exactly() -> None:
    for params in (NO_FILTERS, SamplingParams()):
        assert _draws(params, 42) == _draws(params, 42)


def test_different_seeds_give_different_draws() -> None:
    assert _draws(NO_FILTERS, 1) != _draws(NO_FILTERS, 2)


def test_no_seed_is_random_each_time() -> None:
    assert _draws(NO_FILTERS, None) != _draws(NO_FILTERS, None)


def test_greedy_is_the_argmax_after_the_penalty_and_ignores_the_seed() -> None:
    params = SamplingParams(temperature=0.0, repetition_penalty=2.0)
    logits = t([3.0, 2.0, 0.5])
    assert sample_next_token(logits, params, ids([]), make_generator(1)) == 0
    assert sample_next_token(logits, params, ids([0]), make_generator(1)) == 1  # 3/2 < 2
    generator = make_generator(5)
    state = generator.bit_generator.state
    assert {sample_next_token(logits, params, ids([0]), make_generator(s)) for s in range(5)} == {1}
    sample_next_token(logits, params, ids([0]), generator)
    assert generator.bit_generator.state == state  # greedy draws no random numbers


def test_sampling_never_picks_a_filtered_token() -> None:
    logits = t([5.0, 4.9, 4.8, 0.0, -1.0])
    params = SamplingParams(temperature=1.0, top_k=2, top_p=1.0, min_p=0.0, repetition_penalty=1.0)
    generator = make_generator(0)
    picks = {sample_next_token(logits, params, ids([]), generator) for _ in range(200)}
    assert picks == {0, 1}


def test_draws_follow_the_processed_distribution() -> None:
    # Deterministic given the seed; the tolerance is 5 standard errors.
    logits = np.log(t([0.5, 0.25, 0.15, 0.1]))
    generator = make_generator(123)
    n = 8000
    counts = np.bincount(
        [sample_next_token(logits, NO_FILTERS, ids([]), generator) for _ in range(n)], minlength=4
    )
    for observed, p in zip((counts / n).tolist(), [0.5, 0.25, 0.15, 0.1], strict=True):
        assert abs(observed - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_draws_never_pick_zero_probability_tokens_at_the_edges() -> None:
    # -inf at both ends of the candidate list: the CDF has flat steps there.
    logits = t([-INF, 1.0, -INF, 1.0, -INF])
    generator = make_generator(9)
    picks = {sample_next_token(logits, NO_FILTERS, ids([]), generator) for _ in range(500)}
    assert picks == {1, 3}


def test_make_generator_seeds_reproducibly() -> None:
    a, b = make_generator(7), make_generator(7)
    assert np.array_equal(a.random(4), b.random(4))
    assert not np.array_equal(make_generator(None).random(4), make_generator(None).random(4))


def test_sampling_with_top_k_keeps_ties_with_the_kth() -> None:
    logits = t([1.0, 3.0, 2.0, 2.0, 0.0])
    params = SamplingParams(temperature=1.0, top_k=2, top_p=1.0, min_p=0.0, repetition_penalty=1.0)
    assert process_logits(logits, params, ids([])).tolist() == [-INF, 3.0, 2.0, 2.0, -INF]
    generator = make_generator(0)
    picks = {sample_next_token(logits, params, ids([]), generator) for _ in range(300)}
    assert picks == {1, 2, 3}


# --- presence and frequency penalties (OpenAI definition, over the reply only) ----------------


def openai_penalties(logits: np.ndarray, reply: list[int], presence: float, frequency: float):  # type: ignore[no-untyped-def]
    """The formula from the OpenAI API reference, one token at a time."""
    out = logits.copy()
    for token in set(reply):
        out[token] -= reply.count(token) * frequency + presence
    return out


def test_presence_and_frequency_penalise_reply_tokens_by_count_and_not_the_prompt() -> None:
    params = NO_FILTERS.replace(presence_penalty=0.25, frequency_penalty=0.5)
    history = ids([3, 0, 0, 2])  # prompt [3], reply [0, 0, 2]
    out = process_logits(t([1.0, 1.0, 1.0, 1.0]), params, history, reply_start=1)
    assert out.tolist() == [
        -0.25,
        1.0,
        0.25,
        1.0,
    ]  # 1 - (2*0.5 + 0.25), untouched, 1 - 0.75, prompt


def test_negative_penalties_reward_repeats_and_zero_is_a_noop() -> None:
    logits = t([1.0, 1.0])
    assert apply_presence_frequency_penalties(logits, ids([1, 1]), -1.0, -0.5).tolist() == [1, 3]
    assert apply_presence_frequency_penalties(logits, ids([1]), 0.0, 0.0) is logits
    assert apply_presence_frequency_penalties(logits, ids([]), 1.0, 1.0) is logits


@pytest.mark.parametrize(("presence", "frequency"), [(0.7, 0.0), (0.0, 1.3), (-0.4, 2.0)])
def test_penalties_equal_the_openai_formula_on_random_logits(presence, frequency) -> None:  # type: ignore[no-untyped-def]
    gen = np.random.default_rng(11)
    logits = (gen.standard_normal(4096) * 3).astype(np.float32)
    history = gen.integers(0, 4096, 200)  # 150 prompt + 50 reply, with repeats
    history[150:170] = history[170:190]
    params = NO_FILTERS.replace(presence_penalty=presence, frequency_penalty=frequency)
    expected = openai_penalties(logits, history[150:].tolist(), presence, frequency)
    np.testing.assert_allclose(process_logits(logits, params, history, 150), expected, rtol=1e-6)


def test_greedy_honours_the_penalties() -> None:
    params = SamplingParams(temperature=0.0, frequency_penalty=1.0)
    logits = t([3.0, 2.5, 0.5])
    assert sample_next_token(logits, params, ids([0]), make_generator(1), reply_start=1) == 0
    assert sample_next_token(logits, params, ids([0]), make_generator(1), reply_start=0) == 1
