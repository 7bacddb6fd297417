"""Next-token selection: pure functions over one position's logits, in numpy.

Owns the sampling order and every filter in it. One documented order, used by both
`process_logits` (the filtered distribution, for tests and token probabilities) and
`sample_next_token` (the draw):

    0 grammar mask         ids the output grammar forbids get -inf (``allowed``; None: off)
    1 repetition penalty   over prompt + generated ids (transformers / llama.cpp definition)
    2 presence, frequency  over generated ids only (OpenAI definition); 0 switches each off
    3 temperature          0 means greedy: only the argmax survives
    4 top-k                0 switches it off
    5 top-p                1 switches it off
    6 min-p                0 switches it off
    7 draw                 inverse CDF with an explicit, seeded numpy Generator

Each filter matches the transformers logits processor of the same name
(RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
MinPLogitsWarper with min_tokens_to_keep=1; transformers has no presence/frequency penalty, so
those follow the OpenAI API's formula, as vLLM does): removed tokens get -inf and at least one token
always survives. Randomness is passed in, never global. What each parameter means, its range
and the value that switches it off: `engine.params.PARAMS`.

``previous_ids`` is the prompt followed by the reply so far; ``previous_ids[reply_start:]`` is
the reply alone, for filters that count only generated tokens.

Why numpy and not torch: the fast path hands numpy logits and never needs torch otherwise
(importing it costs ~1 s and ~250 MB of RSS). A Runner that computes in torch hands its logits
over as numpy (`engine.runners.base`); `as_logits` accepts either.

Hot path: this runs once per generated token over the whole vocabulary (49152 for SmolLM2,
151936 for Qwen). Top-k bounds its survivors with strided group maxima (no sort, no partition
of the vocabulary), and top-p ranks a few hundred candidates, never the vocabulary; later steps
and the draw run on the survivors.

Knows nothing about models, text or threads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.types import SamplingParams

_NEG_INF = np.float32(-np.inf)
_TOP_P_FIRST_GUESS = 256  # tokens ranked before top-p falls back to ranking more
_DRAW_BLOCK = 1024  # the draw's first level: block totals of this many tokens
_GROUPS = 64  # top-k's strided groups: their maxima bound the k-th largest logit (see below)

FloatArray = np.ndarray  # (V,) float32 logits
IdArray = np.ndarray  # (N,) int64 token ids


def as_logits(logits: Any) -> np.ndarray:
    """``logits`` as a float32 numpy array: a numpy array as it is (cast when not float32), or
    anything with ``.numpy()`` (a CPU torch tensor) through it, without importing torch."""
    if not isinstance(logits, np.ndarray):
        if hasattr(logits, "detach"):  # a torch tensor: to the CPU, float32, then numpy
            logits = logits.detach().float().cpu()
        logits = logits.numpy()
    return np.asarray(logits, dtype=np.float32)


def apply_repetition_penalty(
    logits: FloatArray, previous_ids: IdArray, penalty: float
) -> FloatArray:
    """Penalise every token seen in ``previous_ids``: positive logits / penalty, negative * penalty.

    ``logits`` (V,), ``previous_ids`` (N,) ints. Each distinct id is penalised once, however
    often it occurred. ``penalty == 1`` (or no previous ids) returns ``logits`` unchanged; the
    input is never modified.
    """
    if penalty == 1.0 or len(previous_ids) == 0:
        return logits
    ids = np.asarray(previous_ids, dtype=np.int64)  # (N,)
    seen = logits[ids]  # (N,) duplicates give identical values, so the assignment is safe
    out = logits.copy()
    out[ids] = np.where(seen < 0, seen * np.float32(penalty), seen / np.float32(penalty))
    return out


def apply_presence_frequency_penalties(
    logits: FloatArray, reply_ids: IdArray, presence: float, frequency: float
) -> FloatArray:
    """The OpenAI API's penalties over the reply so far: each token that occurred c > 0 times
    loses ``c * frequency + presence`` from its logit (negative values reward repeats).

    ``logits`` (V,), ``reply_ids`` (N,) ints: generated tokens only, never the prompt. Both 0
    (or no reply yet) returns ``logits`` unchanged.
    """
    if (presence == 0.0 and frequency == 0.0) or len(reply_ids) == 0:
        return logits
    seen, counts = np.unique(np.asarray(reply_ids, dtype=np.int64), return_counts=True)  # (U,)
    out = logits.copy()
    out[seen] -= counts.astype(np.float32) * np.float32(frequency) + np.float32(presence)
    return out


def apply_temperature(logits: FloatArray, temperature: float) -> FloatArray:
    """Divide by ``temperature``; 1 is a no-op and 0 keeps only the argmax (the greedy limit)."""
    if temperature == 1.0:
        return logits
    if temperature == 0.0:
        return _keep_only(logits, np.array([int(np.argmax(logits))]))
    return logits / np.float32(temperature)


def apply_min_p(logits: FloatArray, min_p: float) -> FloatArray:
    """Drop tokens whose probability is below ``min_p`` times the top token's probability.

    p_i < min_p * p_max  <=>  logit_i < max_logit + log(min_p): the softmax normaliser cancels,
    so this needs no softmax. The top token always survives.
    """
    if min_p <= 0.0:
        return logits
    threshold = np.float32(logits.max() + math.log(min_p))
    return np.where(logits < threshold, _NEG_INF, logits)


def apply_grammar_mask(logits: FloatArray, allowed: np.ndarray | None) -> FloatArray:
    """-inf at every id ``allowed`` (V,) bool forbids (structured output, `engine.tools.grammar`).

    First in the order, so every later filter and the draw see only ids the grammar accepts
    (a -inf stays -inf under the penalties and temperature). None returns ``logits`` unchanged.
    """
    if allowed is None:
        return logits
    return np.where(np.asarray(allowed, dtype=bool), logits, _NEG_INF)


def process_logits(
    logits: Any,
    params: SamplingParams,
    previous_ids: Any,
    reply_start: int = 0,
    allowed: np.ndarray | None = None,
) -> FloatArray:
    """Steps 0-6 of the module's order on ``logits`` (V,); returns (V,) float32 with -inf holes.

    ``softmax`` of the result is the distribution `sample_next_token` draws from.
    """
    logits = apply_grammar_mask(as_logits(logits), allowed)  # 0
    values, indices = _candidates(logits, params, _ids(previous_ids), reply_start)
    if indices is None:
        return values
    out = np.full(logits.shape, _NEG_INF, dtype=np.float32)
    out[indices] = values
    return out


def sample_next_token(
    logits: Any,
    params: SamplingParams,
    previous_ids: Any,
    generator: np.random.Generator | None,
    reply_start: int = 0,
    allowed: np.ndarray | None = None,
) -> int:
    """Pick the next token id from one position's ``logits`` (V,) (numpy, or a torch tensor).

    ``allowed`` (V,) bool: step 0, the grammar's mask (structured output). ``temperature ==
    0``: greedy, the argmax after steps 0-2 (the other filters cannot change the argmax, and
    the generator is not touched). Otherwise steps 0-6, then step 7 draws from the softmax
    with ``generator`` (None: a fresh unseeded one).
    """
    logits = apply_grammar_mask(as_logits(logits), allowed)  # 0; float32 as transformers
    previous = _ids(previous_ids)
    if params.temperature == 0.0:
        return int(np.argmax(_penalised(logits, params, previous, reply_start)))
    values, indices = _candidates(logits, params, previous, reply_start)
    weights = values - values.max()  # (C,) a new array: exp in place
    choice = _draw(np.exp(weights, out=weights), generator)  # 7; unnormalised probabilities
    return choice if indices is None else int(indices[choice])


def make_generator(seed: int | None) -> np.random.Generator:
    """A generator seeded with ``seed``, or from fresh OS entropy when ``seed`` is None."""
    return np.random.default_rng(seed)


def _ids(previous_ids: Any) -> IdArray:
    """``previous_ids`` (a list, numpy array or CPU torch tensor) as an int64 numpy array."""
    if not isinstance(previous_ids, np.ndarray) and hasattr(previous_ids, "numpy"):
        previous_ids = previous_ids.cpu().numpy()
    return np.asarray(previous_ids, dtype=np.int64)


def _penalised(
    logits: FloatArray, params: SamplingParams, previous_ids: IdArray, reply_start: int
) -> FloatArray:
    """Steps 1-2: the penalties on earlier tokens (the only steps that can move the argmax)."""
    logits = apply_repetition_penalty(logits, previous_ids, params.repetition_penalty)  # 1
    reply = previous_ids[reply_start:]  # (N,) the generated tokens
    return apply_presence_frequency_penalties(  # 2
        logits, reply, params.presence_penalty, params.frequency_penalty
    )


def _candidates(
    logits: FloatArray, params: SamplingParams, previous_ids: IdArray, reply_start: int
) -> tuple[FloatArray, IdArray | None]:
    """Steps 1-6 in order. Returns (values, indices): the surviving tokens' processed logits
    and their vocabulary ids, or (all V logits, None) when neither top-k nor top-p is on.

    Top-k and top-p gather their survivors, so the later steps and the draw run on a few
    dozen values instead of the vocabulary. That gives the same result as filtering the whole
    vocabulary: the dropped tokens have probability 0 and min-p only compares with the top one.
    """
    logits = _penalised(logits, params, previous_ids, reply_start)  # 1-2
    logits = apply_temperature(logits, params.temperature)  # 3
    indices: IdArray | None = None
    if 0 < params.top_k < len(logits):  # 4
        logits, indices = _top_k_survivors(logits, params.top_k)
    if params.top_p < 1.0:  # 5
        logits, kept = _top_p_survivors(logits, params.top_p)
        indices = kept if indices is None else indices[kept]
    logits = apply_min_p(logits, params.min_p)  # 6
    return logits, indices


def _top_k_survivors(logits: FloatArray, top_k: int) -> tuple[FloatArray, IdArray]:
    """The top-k logits and their ids, plus any token tied with the k-th (as transformers:
    every token whose logit is >= the k-th largest survives), in vocabulary order.

    Needs top_k < len(logits).
    """
    indices = _at_least_kth(logits, top_k)  # (k + ties,)
    return logits[indices], indices


def _at_least_kth(logits: FloatArray, k: int) -> IdArray:
    """Ids of every logit >= the k-th largest (k of them, more with ties), in vocabulary order.

    No sort, and no partition of the whole vocabulary (a partition of 151,936 floats costs
    ~1 ms here): the vocabulary is cut into ``_GROUPS`` strided groups, and the k-th largest
    of the group maxima is a lower bound of the k-th largest logit (k groups each hold a
    value at least that large). One comparison then leaves a few dozen candidates, and the
    k-th largest among them is the k-th largest overall (all of the top k are candidates).
    """
    n = len(logits)
    cols = n // _GROUPS
    if cols <= k:  # a small vocabulary or a large k: partition it all
        kth = np.partition(logits, n - k)[n - k]
        return np.flatnonzero(logits >= kth)
    maxima = logits[: _GROUPS * cols].reshape(_GROUPS, cols).max(axis=0)  # (cols,)
    if _GROUPS * cols < n:  # the last few logits are groups of their own
        maxima = np.concatenate([maxima, logits[_GROUPS * cols :]])
    bound = np.partition(maxima, len(maxima) - k)[len(maxima) - k]
    candidates = np.flatnonzero(logits >= bound)  # (>= k,)
    values = logits[candidates]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    survivors: IdArray = candidates[values >= kth]
    return survivors


def _top_p_survivors(logits: FloatArray, top_p: float) -> tuple[FloatArray, IdArray]:
    """The logits of the tokens top-p keeps and their positions in ``logits``, most likely first.

    transformers sorts ascending and drops tokens whose cumulative probability is <= 1 - top_p;
    equivalently a token survives when the mass of the tokens ranked above it is < top_p, so
    the most likely token always survives.
    Instead of sorting the whole vocabulary this ranks the top 256 (`_at_least_kth`, then a
    sort of those) and widens only while they hold less than top_p of the mass.
    """
    exp = np.exp(logits - logits.max())  # (V,) unnormalised probabilities
    total = float(exp.sum(dtype=np.float64))
    n = len(exp)
    k = min(_TOP_P_FIRST_GUESS, n)
    while True:
        top_ids = _at_least_kth(logits, k) if k < n else np.arange(n)  # (k + ties,)
        top_ids = top_ids[np.argsort(-logits[top_ids], kind="stable")]  # descending
        # float64 sums: near top_p -> 1 a float32 running sum drifts by more than the tail
        # probabilities it is compared with (transformers avoids this by summing ascending).
        top_probs = exp[top_ids].astype(np.float64) / total  # (k,)
        if k == n or float(top_probs.sum()) >= top_p:
            break
        k = min(k * 8, n)
    mass_above = np.cumsum(top_probs) - top_probs  # (k,) exclusive cumulative sum
    kept = top_ids[mass_above < top_p]  # (n,) a prefix of the ranking: never empty
    return logits[kept], kept


def _draw(weights: FloatArray, generator: np.random.Generator | None) -> int:
    """One draw from ``weights`` (C,) (probabilities, normalised or not) by inverting the CDF
    with a single uniform from ``generator``.

    Zero-weight tokens own an empty interval, so they are never drawn. Sums are float64. Over a
    whole vocabulary (no top-k / top-p) the CDF is found in two levels, block totals and then
    one block's running sum, because numpy's cumsum over 151k values costs milliseconds while
    a blocked sum costs tens of microseconds; the result is the same inverse CDF.
    """
    rng = generator if generator is not None else np.random.default_rng()
    u = rng.random()
    if len(weights) <= _DRAW_BLOCK:
        return _invert(weights, u)
    full = len(weights) // _DRAW_BLOCK * _DRAW_BLOCK
    sums = weights[:full].reshape(-1, _DRAW_BLOCK).sum(axis=1, dtype=np.float64)  # (C/B,)
    if full < len(weights):
        sums = np.append(sums, weights[full:].sum(dtype=np.float64))
    block = _invert(sums, u)
    base = block * _DRAW_BLOCK
    inside = weights[base : base + _DRAW_BLOCK]
    # The uniform's position inside the block, rescaled to [0, 1) of the block's own weight.
    before = float(sums[:block].sum())
    total = float(sums.sum())
    u_inside = min(max((u * total - before) / float(sums[block]), 0.0), np.nextafter(1.0, 0.0))
    return base + _invert(inside, u_inside)


def _invert(weights: np.ndarray, u: float) -> int:
    """The index whose CDF interval holds ``u`` (in [0, 1)) times the total of ``weights``."""
    cdf = np.cumsum(weights, dtype=np.float64)  # (C,) C <= a block, or the survivors
    index = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    if index >= len(cdf):  # u rounded up to the total: take the last token that has weight
        index = int(np.flatnonzero(weights)[-1])
    return index


def _keep_only(logits: FloatArray, keep: IdArray) -> FloatArray:
    """-inf everywhere except at the ids in ``keep``."""
    out = np.full(logits.shape, _NEG_INF, dtype=np.float32)
    out[keep] = logits[keep]
    return out


def token_logprobs(logits: Any, token: int, top: int) -> tuple[float, list[tuple[int, float]]]:
    """``token``'s log probability under ``logits`` (V,) and the ``top`` likeliest ids with
    theirs, likeliest first (ties by lower id). Raw logits: no temperature or filter applied."""
    x = as_logits(logits).astype(np.float64)  # (V,)
    shifted = x - x.max()
    logz = math.log(float(np.exp(shifted).sum()))
    logp = shifted - logz  # (V,)
    best: list[tuple[int, float]] = []
    if top > 0:
        k = min(top, logp.shape[0])
        ids = np.argpartition(-logp, k - 1)[:k]
        ids = ids[np.lexsort((ids, -logp[ids]))]
        best = [(int(i), float(logp[i])) for i in ids]
    return float(logp[token]), best
