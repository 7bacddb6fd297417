"""`bench.perplexity_llama.paired_interval`: the 95 % interval of a perplexity ratio.

Paired per-token NLLs: equal sides give a zero-width interval at 0; a constant shift c gives
exactly e^c − 1 at both ends; noise of known size gives an interval around the true shift
whose width shrinks as tokens are added; its coverage over many draws is about 95 % (Student's
t with few blocks, not 1.96); fewer than two blocks give no interval.
"""

from __future__ import annotations

import math

import numpy as np

from bench.perplexity_llama import BLOCK, paired_interval


def test_equal_sides_and_a_constant_shift_are_exact() -> None:
    base = list(np.random.default_rng(0).uniform(0, 12, 10 * BLOCK))
    assert paired_interval(base, base) == (0.0, 0.0)
    low, high = paired_interval([v + 0.01 for v in base], base)
    assert math.isclose(low, math.expm1(0.01)) and math.isclose(high, math.expm1(0.01))


def test_noise_gives_an_interval_around_the_shift_that_narrows_with_tokens() -> None:
    rng = np.random.default_rng(1)
    widths = []
    for blocks in (8, 128):
        theirs = rng.uniform(0, 12, blocks * BLOCK)
        mine = theirs + 0.005 + rng.normal(0, 0.5, theirs.size)
        low, high = paired_interval(list(mine), list(theirs))
        assert low < math.expm1(0.005) < high
        widths.append(high - low)
    assert widths[1] < widths[0] / 2


def test_it_covers_the_true_shift_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(2)
    shift, hits, draws = 0.01, 0, 400
    for _ in range(draws):
        theirs = rng.uniform(0, 12, 5 * BLOCK + 17)  # 5 blocks, a remainder: 4 degrees
        mine = theirs + shift + rng.normal(0, 0.5, theirs.size)
        low, high = paired_interval(list(mine), list(theirs))
        hits += low < math.expm1(shift) < high
    assert 0.91 <= hits / draws <= 0.99, hits / draws


def test_too_few_tokens_give_no_interval() -> None:
    low, high = paired_interval([1.0] * BLOCK, [0.5] * BLOCK)
    assert math.isnan(low) and math.isnan(high)
