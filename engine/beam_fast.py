"""Beam search on the ONNX fast path: the beams are the rows of one batched decode step.

Owns `fast_beam_ids`, the token ids of the best beam, computed the way transformers'
``generate(num_beams=N, do_sample=False)`` computes them (its defaults: length penalty 1.0,
``early_stopping=False``), so a reply does not depend on which path ran it:

- each step scores every running beam's next token by its log-softmax (float32), the
  repetition penalty applied to those log-probabilities over prompt + beam (transformers runs
  its logits processors after the log-softmax), plus the beam's running score;
- the best K = max(2, 1 + number of EOS ids) · N candidates over all beams are kept; those that
  end (an EOS id, the last allowed token, or cancel) and rank among the first N become finished
  hypotheses scored by sum / length ** length_penalty; the best N that do not end run on;
- the search stops when every candidate ends, or when N hypotheses are finished and the best
  running beam, at its current length, cannot beat the worst of them.

The caches live in a `engine.runners.batched.BatchedDecoder` (one slot per beam, sharing the
runner's session and weights): one graph run per step for all beams, and the surviving beams'
caches are copied into their new slots (`BatchedDecoder.reorder`). No torch, no second copy of
the weights: before this, beam search loaded the model a second time in float32 through
transformers, which a 7B model does not fit. Does not own prompt fitting, stop strings, decoding
to text or events (`engine.beam`), nor the architectures batching refuses (hybrid recurrent
state, MoE files on the nested-`If` expert graph: `engine.runners.batched.batch_refusal`; those
still go through torch; MoE files on the expert op batch).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.runners.batched import BatchedDecoder
from engine.sampling import apply_repetition_penalty

LENGTH_PENALTY = 1.0  # transformers' default; the engine exposes no length penalty
NEG = np.float32(-1e9)  # transformers' "impossible" score


@dataclass(frozen=True)
class BeamSettings:
    """What one beam search runs with."""

    num_beams: int
    max_new: int  # tokens the reply may have (the last one ends every beam)
    eos_ids: frozenset[int]
    repetition_penalty: float = 1.0


def fast_beam_ids(
    decoder: BatchedDecoder,
    prompt: Sequence[int],
    settings: BeamSettings,
    cancel: threading.Event,
) -> list[int]:
    """The best beam's generated ids (ending with its EOS id when it ended on one).

    ``decoder`` needs ``settings.num_beams`` slots, empty, and room for prompt + max_new tokens.
    """
    n, prompt = settings.num_beams, [int(i) for i in prompt]
    if settings.max_new <= 0:
        return []
    keep = max(2, 1 + len(settings.eos_ids)) * n
    running: list[list[int]] = [[]]  # generated ids per beam; only beam 0 exists at first
    scores = np.zeros(1, dtype=np.float32)
    finished: list[tuple[float, list[int]]] = []  # best first, at most n
    improvable = True
    logits = decoder.prefill(0, prompt)[None]  # (1, V)
    for step in range(settings.max_new):
        acc = _log_probs(logits, prompt, running, settings.repetition_penalty) + scores[:, None]
        cand_scores, beams, tokens = _top_candidates(acc, keep)
        ends = np.array([
            int(t) in settings.eos_ids or step + 1 >= settings.max_new or cancel.is_set()
            for t in tokens
        ])  # fmt: skip
        if improvable:
            finished = _with_finished(finished, n, step, cand_scores, beams, tokens, ends, running)
        live = np.flatnonzero(~ends)[:n]
        if len(live) == 0:
            break
        running = [running[beams[j]] + [int(tokens[j])] for j in live]
        scores = cand_scores[live]
        improvable = improvable and _can_improve(finished, n, float(scores[0]), step + 1)
        if not improvable:
            break
        decoder.reorder([int(beams[j]) for j in live])
        logits = decoder.decode([int(tokens[j]) for j in live])
    return finished[0][1] if finished else running[0]


def _log_probs(
    logits: np.ndarray, prompt: list[int], running: list[list[int]], penalty: float
) -> np.ndarray:
    """Each beam's next-token log-probabilities, repetition-penalised: (beams, V) float32."""
    x = np.asarray(logits, dtype=np.float32)
    shifted = x - x.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    if penalty == 1.0:
        return np.asarray(logp, dtype=np.float32)
    rows = [apply_repetition_penalty(logp[b], np.asarray(prompt + seq), penalty)
            for b, seq in enumerate(running)]  # fmt: skip
    return np.stack(rows)


def _top_candidates(acc: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``keep`` best (beam, token) continuations, best first: scores, beams, tokens."""
    flat = acc.ravel()
    keep = min(keep, flat.size)
    top = np.argpartition(-flat, keep - 1)[:keep]
    top = top[np.argsort(-flat[top], kind="stable")]
    beams, tokens = np.divmod(top, acc.shape[1])
    return flat[top], beams, tokens


def _with_finished(
    finished: list[tuple[float, list[int]]],
    n: int,
    step: int,
    cand_scores: np.ndarray,
    beams: np.ndarray,
    tokens: np.ndarray,
    ends: np.ndarray,
    running: list[list[int]],
) -> list[tuple[float, list[int]]]:
    """``finished`` plus the candidates among the first ``n`` that end, best ``n`` kept."""
    length = float(step + 1) ** LENGTH_PENALTY
    new = [(float(cand_scores[j]) / length, running[beams[j]] + [int(tokens[j])])
           for j in range(min(n, len(tokens))) if ends[j]]  # fmt: skip
    if not new:
        return finished
    # sorted() is stable: an earlier hypothesis wins a tie, as transformers' merge keeps it first
    return sorted(finished + new, key=lambda h: -h[0])[:n]


def _can_improve(finished: list[tuple[float, list[int]]], n: int, best: float, length: int) -> bool:
    """transformers' early-stop heuristic (``early_stopping=False``): until ``n`` hypotheses are
    finished, always; then only while the best running beam at its current length beats the
    worst finished one."""
    if len(finished) < n:
        return True
    return bool(best / float(length) ** LENGTH_PENALTY > finished[-1][0])
