"""The numpy sampler against a plain reference written from `engine.sampling`'s definitions.

The reference filters the whole vocabulary one token at a time, sorts fully and sums in
float64: no partitions, no gathered survivors, no blocked CDF. Random logits, also integer-valued
ones (many ties at the top-k and top-p cuts) and masked ones (mostly -inf); top-p edges, min-p,
the repetition penalty on negative and zero logits, the presence and frequency penalties. Ties
may keep different ids of equal logits, so kept sets are compared as the multiset of kept values
plus their count.
Then the draw over more than one block of the two-level CDF: the frequencies follow the
distribution and a token with no mass is never drawn.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.sampling import make_generator, process_logits, sample_next_token
from engine.types import SamplingParams

INF = float("inf")
OFF = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0)


def reference(
    logits: np.ndarray, p: SamplingParams, history: np.ndarray, reply_start: int = 0
) -> np.ndarray:
    """Steps 1-6 of `engine.sampling`, the plain way (see the module docstring)."""
    x = logits.astype(np.float32).copy()
    if p.repetition_penalty != 1.0:  # 1: each distinct seen id once
        for token in set(history.tolist()):
            v = x[token]
            pen = np.float32(p.repetition_penalty)
            x[token] = v * pen if v < 0 else v / pen
    reply = history[reply_start:].tolist()
    if p.presence_penalty or p.frequency_penalty:  # 2: the OpenAI formula
        for token in set(reply):
            count = np.float32(reply.count(token))
            x[token] -= count * np.float32(p.frequency_penalty) + np.float32(p.presence_penalty)
    if p.temperature == 0.0:  # 3
        keep = int(np.argmax(x))
        x = np.where(np.arange(len(x)) == keep, x, np.float32(-INF)).astype(np.float32)
    elif p.temperature != 1.0:
        x = x / np.float32(p.temperature)
    if 0 < p.top_k < len(x):  # 4: >= the k-th largest survives (ties included)
        kth = np.sort(x)[::-1][p.top_k - 1]
        x[x < kth] = -INF
    if p.top_p < 1.0:  # 5: the mass ranked above a token must be < top_p
        probs = _softmax64(x)
        order = np.argsort(-x, kind="stable")
        above = np.cumsum(probs[order]) - probs[order]
        x[order[above >= p.top_p]] = -INF
    if p.min_p > 0.0:  # 6
        x[x < x.max() + math.log(p.min_p)] = -INF
    return x


def _softmax64(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - np.max(x))
    return e / e.sum()


def _near_top_p_cut(x_before_top_p: np.ndarray, top_p: float) -> bool:
    """Whether some token's mass-above lies within float32 rounding of top_p (either way)."""
    probs = np.sort(_softmax64(x_before_top_p))[::-1]
    above = (np.cumsum(probs) - probs)[1:]  # the top token (0 above) always survives
    return bool(np.any(np.abs(above - top_p) < 1e-6))


def assert_same(ours: np.ndarray, expected: np.ndarray, ties: bool) -> None:
    """The same kept values (a multiset) and count; without ``ties`` the very same ids."""
    kept, kept_ref = np.isfinite(ours), np.isfinite(expected)
    assert kept.sum() == kept_ref.sum(), (int(kept.sum()), int(kept_ref.sum()))
    np.testing.assert_array_equal(np.sort(ours[kept]), np.sort(expected[kept_ref]))
    if not ties:
        np.testing.assert_array_equal(kept, kept_ref)


SETTINGS = [
    SamplingParams(),  # the app's defaults
    SamplingParams(repetition_penalty=1.3, presence_penalty=0.4, frequency_penalty=0.6),
    SamplingParams(temperature=1.2, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.1),
    SamplingParams(temperature=0.5, top_k=1, top_p=1.0, min_p=0.0),  # top-1 with ties at the top
    SamplingParams(temperature=1.0, top_k=7, top_p=0.5, min_p=0.0),
    SamplingParams(temperature=1.0, top_k=0, top_p=1e-9, min_p=0.0),  # only one, even with ties
    SamplingParams(temperature=0.9, top_k=0, top_p=0.999999, min_p=0.0),
    SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.3),
    SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.999),
    SamplingParams(temperature=0.7, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=0.7),
    SamplingParams(temperature=0.0, repetition_penalty=1.5),  # greedy: the argmax only
]


@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: repr(p.to_dict()))
@pytest.mark.parametrize("kind", ["normal", "integers", "masked"])
def test_filters_equal_the_reference(params: SamplingParams, kind: str) -> None:
    for seed in range(4):
        rng = np.random.default_rng(seed)
        vocab = 3000
        if kind == "normal":
            logits = (rng.standard_normal(vocab) * 3).astype(np.float32)
        elif kind == "integers":  # few distinct values: ties at every cut, negatives and zeros
            logits = rng.integers(-4, 5, vocab).astype(np.float32)
        else:  # a grammar's mask: most ids -inf, fewer allowed than top-k in some groups
            logits = (rng.standard_normal(vocab) * 3).astype(np.float32)
            logits[rng.random(vocab) < 0.97] = -INF
        history = rng.integers(0, vocab, 400)
        expected = reference(logits, params, history, 300)
        if params.top_p < 1.0:
            before = reference(logits, params.replace(top_p=1.0, min_p=0.0), history, 300)
            if _near_top_p_cut(before, params.top_p):
                continue  # float32 vs float64 masses may decide a boundary token either way
        assert_same(process_logits(logits, params, history, 300), expected, kind == "integers")


def test_repetition_penalty_on_negative_and_zero_logits() -> None:
    logits = np.array([-2.0, 0.0, 2.0, -0.5, 1.0], dtype=np.float32)
    history = np.array([0, 1, 2, 3, 3], dtype=np.int64)
    params = OFF.replace(repetition_penalty=2.0)
    out = process_logits(logits, params, history)
    assert out.tolist() == [-4.0, 0.0, 1.0, -1.0, 1.0]
    assert np.array_equal(out, reference(logits, params, history))


@pytest.mark.parametrize(("top_p", "kept"), [(0.25, 1), (0.5, 2), (0.5000001, 3), (0.75, 3)])
def test_top_p_on_exact_prefix_masses(top_p: float, kept: int) -> None:
    """Four equal tokens (0.25 each, exact in float): the mass above the n-th is (n-1)/4, and a
    token survives only when that is strictly below top_p."""
    logits = np.ones(4, dtype=np.float32)
    out = process_logits(logits, OFF.replace(top_p=top_p), np.array([], dtype=np.int64))
    assert int(np.isfinite(out).sum()) == kept


def test_top_p_widening_past_the_first_guess_equals_the_reference() -> None:
    logits = (np.random.default_rng(5).standard_normal(20000) * 0.5).astype(np.float32)
    params = OFF.replace(top_p=0.95)  # a flat distribution: thousands of survivors
    history = np.array([], dtype=np.int64)
    ours, expected = process_logits(logits, params, history), reference(logits, params, history)
    assert_same(ours, expected, ties=False)


def test_the_draw_follows_the_distribution_across_blocks() -> None:
    """5000 tokens (4 whole blocks of the two-level CDF and a partial one): mass on block
    edges and in the partial block, -inf everywhere else."""
    weights = {3: 0.1, 1023: 0.2, 1024: 0.15, 2047: 0.05, 3072: 0.1, 4100: 0.15, 4999: 0.25}
    logits = np.full(5000, -INF, dtype=np.float32)
    for token, p in weights.items():
        logits[token] = math.log(p)
    generator = make_generator(2024)
    n = 8000
    picks = [
        sample_next_token(logits, OFF, np.array([], dtype=np.int64), generator) for _ in range(n)
    ]
    counts = np.bincount(picks, minlength=5000)
    assert set(np.flatnonzero(counts)) <= set(weights)  # never a token without mass
    for token, p in weights.items():  # deterministic given the seed; 5 standard errors
        assert abs(counts[token] / n - p) < 5 * math.sqrt(p * (1 - p) / n), token


def test_seeded_draws_repeat_and_differ_by_seed_over_a_real_vocabulary() -> None:
    logits = (np.random.default_rng(8).standard_normal(151936) * 2).astype(np.float32)
    history = np.arange(50, dtype=np.int64)

    def draws(seed: int, params: SamplingParams) -> list[int]:
        generator = make_generator(seed)
        return [sample_next_token(logits, params, history, generator, 10) for _ in range(12)]

    for params in (SamplingParams(), OFF, OFF.replace(top_p=0.9), OFF.replace(min_p=0.1)):
        assert draws(5, params) == draws(5, params)
        assert draws(5, params) != draws(6, params)
