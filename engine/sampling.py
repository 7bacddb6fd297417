"""Next-token selection: pure functions over one position's logits.

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
    7 draw                 inverse CDF with an explicit, seeded torch.Generator

Each filter matches the transformers logits processor of the same name
(RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
MinPLogitsWarper with min_tokens_to_keep=1; transformers has no presence/frequency penalty, so
those follow the OpenAI API's formula, as vLLM does): removed tokens get -inf and at least one token
always survives. Randomness is passed in, never global. What each parameter means, its range
and the value that switches it off: `engine.params.PARAMS`.

``previous_ids`` is the prompt followed by the reply so far; ``previous_ids[reply_start:]`` is
the reply alone, for filters that count only generated tokens.

Hot path: this runs once per generated token over the whole vocabulary (49152 for SmolLM2).
Top-k and top-p gather their survivors (`_top_k_survivors`, `_top_p_survivors`; there is no
whole-vocabulary variant), so later steps and the draw run on a few dozen values instead of
re-scanning the vocabulary; top-p ranks a few hundred tokens, never sorts them all.

Knows nothing about models, text or threads.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from engine.types import SamplingParams

_NEG_INF = float("-inf")
_TOP_P_FIRST_GUESS = 256  # tokens ranked before top-p falls back to ranking more


def apply_repetition_penalty(logits: Tensor, previous_ids: Tensor, penalty: float) -> Tensor:
    """Penalise every token seen in ``previous_ids``: positive logits / penalty, negative * penalty.

    ``logits`` (V,), ``previous_ids`` (N,) long. Each distinct id is penalised once, however often
    it occurred. ``penalty == 1`` (or no previous ids) returns ``logits`` unchanged.
    """
    if penalty == 1.0 or previous_ids.numel() == 0:
        return logits
    ids = previous_ids.to(device=logits.device, dtype=torch.long)  # (N,)
    seen = logits.gather(0, ids)  # (N,) duplicates give identical values, so scatter is safe
    penalised = torch.where(seen < 0, seen * penalty, seen / penalty)
    return logits.scatter(0, ids, penalised)


def apply_presence_frequency_penalties(
    logits: Tensor, reply_ids: Tensor, presence: float, frequency: float
) -> Tensor:
    """The OpenAI API's penalties over the reply so far: each token that occurred c > 0 times
    loses ``c * frequency + presence`` from its logit (negative values reward repeats).

    ``logits`` (V,), ``reply_ids`` (N,) long: generated tokens only, never the prompt. Both 0
    (or no reply yet) returns ``logits`` unchanged.
    """
    if (presence == 0.0 and frequency == 0.0) or reply_ids.numel() == 0:
        return logits
    ids = reply_ids.to(device=logits.device, dtype=torch.long)  # (N,)
    seen, counts = torch.unique(ids, return_counts=True)  # (U,) each distinct id once
    penalty = counts.to(logits.dtype) * frequency + presence  # (U,)
    return logits.index_add(0, seen, -penalty)


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """Divide by ``temperature``; 1 is a no-op and 0 keeps only the argmax (the greedy limit)."""
    if temperature == 1.0:
        return logits
    if temperature == 0.0:
        return _keep_only(logits, logits.argmax().view(1))
    return logits / temperature


def apply_min_p(logits: Tensor, min_p: float) -> Tensor:
    """Drop tokens whose probability is below ``min_p`` times the top token's probability.

    p_i < min_p * p_max  <=>  logit_i < max_logit + log(min_p): the softmax normaliser cancels,
    so this needs no softmax. The top token always survives.
    """
    if min_p <= 0.0:
        return logits
    threshold = logits.max() + math.log(min_p)
    return logits.masked_fill(logits < threshold, _NEG_INF)


def apply_grammar_mask(logits: Tensor, allowed: Tensor | None) -> Tensor:
    """-inf at every id ``allowed`` (V,) bool forbids (structured output, `engine.tools.grammar`).

    First in the order, so every later filter and the draw see only ids the grammar accepts
    (a -inf stays -inf under the penalties and temperature). None returns ``logits`` unchanged.
    """
    if allowed is None:
        return logits
    return logits.masked_fill(~allowed.to(logits.device), _NEG_INF)


def process_logits(
    logits: Tensor,
    params: SamplingParams,
    previous_ids: Tensor,
    reply_start: int = 0,
    allowed: Tensor | None = None,
) -> Tensor:
    """Steps 0-6 of the module's order on ``logits`` (V,); returns (V,) float32 with -inf holes.

    ``softmax`` of the result is the distribution `sample_next_token` draws from.
    """
    logits = apply_grammar_mask(logits.float(), allowed)  # 0
    values, indices = _candidates(logits, params, previous_ids, reply_start)
    if indices is None:
        return values
    return torch.full_like(logits, _NEG_INF, dtype=torch.float32).scatter(0, indices, values)


def sample_next_token(
    logits: Tensor,
    params: SamplingParams,
    previous_ids: Tensor,
    generator: torch.Generator | None,
    reply_start: int = 0,
    allowed: Tensor | None = None,
) -> int:
    """Pick the next token id from one position's ``logits`` (V,).

    ``allowed`` (V,) bool: step 0, the grammar's mask (structured output). ``temperature ==
    0``: greedy, the argmax after steps 0-2 (the other filters cannot change the argmax, and
    the generator is not touched). Otherwise steps 0-6, then step 7 draws from the softmax
    with ``generator``.
    """
    logits = apply_grammar_mask(logits.float(), allowed)  # 0; float32 as transformers' generate
    if params.temperature == 0.0:
        return int(_penalised(logits, params, previous_ids, reply_start).argmax())
    values, indices = _candidates(logits, params, previous_ids, reply_start)
    choice = _draw(values.softmax(dim=0), generator)  # 7; C = k survivors with top-k on, else V
    return choice if indices is None else int(indices[choice])


def make_generator(seed: int | None, device: str | torch.device = "cpu") -> torch.Generator:
    """A generator seeded with ``seed``, or from fresh OS entropy when ``seed`` is None."""
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


def _penalised(
    logits: Tensor, params: SamplingParams, previous_ids: Tensor, reply_start: int
) -> Tensor:
    """Steps 1-2: the penalties on earlier tokens (the only steps that can move the argmax)."""
    logits = apply_repetition_penalty(logits, previous_ids, params.repetition_penalty)  # 1
    reply = previous_ids[reply_start:]  # (N,) the generated tokens
    return apply_presence_frequency_penalties(  # 2
        logits, reply, params.presence_penalty, params.frequency_penalty
    )


def _candidates(
    logits: Tensor, params: SamplingParams, previous_ids: Tensor, reply_start: int
) -> tuple[Tensor, Tensor | None]:
    """Steps 1-6 in order. Returns (values, indices): the surviving tokens' processed logits
    and their vocabulary ids, or (all V logits, None) when neither top-k nor top-p is on.

    Top-k and top-p gather their survivors, so the later steps and the draw run on a few
    dozen values instead of the vocabulary. That gives the same result as filtering the whole
    vocabulary: the dropped tokens have probability 0 and min-p only compares with the top one.
    """
    logits = logits.float()  # (V,) models may hand bf16/fp16; filters need float32 sums
    logits = _penalised(logits, params, previous_ids, reply_start)  # 1-2
    logits = apply_temperature(logits, params.temperature)  # 3
    indices: Tensor | None = None
    if 0 < params.top_k < logits.numel():  # 4
        logits, indices = _top_k_survivors(logits, params.top_k)
    if params.top_p < 1.0:  # 5
        logits, kept = _top_p_survivors(logits, params.top_p)
        indices = kept if indices is None else indices[kept]
    logits = apply_min_p(logits, params.min_p)  # 6
    return logits, indices


def _top_k_survivors(logits: Tensor, top_k: int) -> tuple[Tensor, Tensor]:
    """The top-k logits and their ids, plus any token tied with the k-th (as transformers).

    Ranks k + 1 so that a tie shows as the (k+1)-th equal to the k-th: the common no-tie case
    then costs one pass over the vocabulary instead of three. Needs top_k < len(logits).
    """
    values, indices = torch.topk(logits, top_k + 1)  # (k+1,) descending
    if bool(values[top_k] < values[top_k - 1]):
        return values[:top_k], indices[:top_k]
    indices = torch.nonzero(logits >= values[top_k - 1]).view(-1)  # rare: ties at the k-th
    return logits[indices], indices


def _top_p_survivors(logits: Tensor, top_p: float) -> tuple[Tensor, Tensor]:
    """The logits of the tokens top-p keeps and their positions in ``logits``, most likely first.

    transformers sorts ascending and drops tokens whose cumulative probability is <= 1 - top_p;
    equivalently a token survives when the mass of the tokens ranked above it is < top_p, so
    the most likely token always survives.
    Instead of sorting the whole vocabulary (~5-15 ms for 49152 here) this ranks the top 256
    and widens only while they hold less than top_p of the mass.
    """
    probs = logits.softmax(dim=0)  # (V,)
    k = min(_TOP_P_FIRST_GUESS, probs.numel())
    while True:
        top_probs, top_ids = torch.topk(probs, k)  # (k,) descending
        # float64 sums: near top_p -> 1 a float32 running sum drifts by more than the tail
        # probabilities it is compared with (transformers avoids this by summing ascending).
        top_probs = top_probs.double()
        if k == probs.numel() or float(top_probs.sum()) >= top_p:
            break
        k = min(k * 8, probs.numel())
    mass_above = top_probs.cumsum(dim=0) - top_probs  # (k,) exclusive cumulative sum
    kept = top_ids[mass_above < top_p]  # (n,) a prefix of the ranking: never empty
    return logits[kept], kept


def _draw(probs: Tensor, generator: torch.Generator | None) -> int:
    """One draw from ``probs`` (C,) by inverting the CDF with a single uniform from ``generator``.

    The same distribution as ``torch.multinomial(probs, 1)``, which on CPU spends ~1.5 ms per
    call on a 49152 vocabulary (it draws one exponential per token); this costs one cumsum and
    one binary search. Zero-probability tokens own an empty interval, so they are never drawn.
    """
    cdf = probs.cumsum(dim=0)  # (C,)
    # The uniform comes from wherever the generator lives, so a CPU generator (make_generator's
    # default) drives CUDA logits too and a seed gives the same draws on either device.
    where = generator.device if generator is not None else cdf.device
    u = torch.rand(1, generator=generator, device=where).to(cdf.device, cdf.dtype) * cdf[-1]
    index = int(torch.searchsorted(cdf, u, right=True))
    if index >= cdf.numel():  # u rounded up to the total: take the last token that has mass
        index = int(torch.nonzero(probs).max())
    return index


def _keep_only(logits: Tensor, keep: Tensor) -> Tensor:
    """-inf everywhere except at the ids in ``keep``."""
    return torch.full_like(logits, _NEG_INF).scatter(0, keep, logits.gather(0, keep))
