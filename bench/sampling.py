"""`python -m bench sampling`: what picking one token costs, per vocabulary size and setting.

Times `engine.sampling.sample_next_token` (numpy: the engine's sampler on every path) on random
logits rows of a real vocabulary size (49,152 SmolLM2, 151,936 Qwen), next to transformers'
own per-token work in ``generate(do_sample=True)``: its logits processors (repetition penalty,
temperature, top-k, top-p, min-p) and ``torch.multinomial`` on the same rows, with torch on
one thread as the engine's sampler runs. Each figure is the best of ``--repeat`` rounds (other
work on a shared machine only slows a round down), in microseconds per token. Figures only.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

VOCABS = (49152, 151936)
HISTORY = 600  # prompt + reply ids the penalties look at
ROWS = 16  # distinct logits rows cycled through (no row stays in cache)


def settings() -> dict[str, Any]:
    from engine.types import SamplingParams

    off = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)
    return {
        "app defaults (T0.7 k40 p0.95 min-p0.05)": SamplingParams(),
        "defaults + penalties": SamplingParams(repetition_penalty=1.1, frequency_penalty=0.3),
        "top-p 0.9 only": off.replace(top_p=0.9),
        "no filters (T1)": off,
        "greedy": SamplingParams(temperature=0.0),
    }


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("sampling", help="per-token sampling cost, numpy vs transformers")
    p.add_argument("--repeat", type=int, default=5, help="rounds; the best is kept")
    p.add_argument("--seconds", type=float, default=0.3, help="length of one round")
    p.add_argument("--no-peer", action="store_true", help="skip transformers (torch)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def run(args: argparse.Namespace) -> int:
    rows = measure(args.repeat, args.seconds, peer=not args.no_peer)
    print(json.dumps(rows, indent=2) if args.json else format_report(rows))
    return 0


def measure(repeat: int, seconds: float, peer: bool = True) -> list[dict[str, Any]]:
    from engine.sampling import make_generator, sample_next_token

    rows: list[dict[str, Any]] = []
    for vocab in VOCABS:
        rng = np.random.default_rng(0)
        logits = [(rng.standard_normal(vocab) * 3).astype(np.float32) for _ in range(ROWS)]
        history = rng.integers(0, vocab, HISTORY)
        for name, params in settings().items():
            generator = make_generator(1)

            def ours(row: np.ndarray, p: Any = params, g: Any = generator, h: Any = history) -> int:
                return sample_next_token(row, p, h, g, HISTORY - 100)

            row: dict[str, Any] = {"vocab": vocab, "setting": name}
            row["engine_us"] = _best(ours, logits, repeat, seconds)
            if peer:
                row["transformers_us"] = _best(_peer(params, history), logits, repeat, seconds)
            rows.append(row)
    return rows


def _best(
    pick: Callable[[np.ndarray], int], rows: list[np.ndarray], repeat: int, s: float
) -> float:
    """Microseconds per token: the best of ``repeat`` rounds of about ``s`` seconds each."""
    for row in rows[:2]:
        pick(row)  # warm-up
    best = float("inf")
    for _ in range(repeat):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < s:
            for row in rows:
                pick(row)
            n += len(rows)
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def _peer(params: Any, history: np.ndarray) -> Callable[[np.ndarray], int]:
    """transformers' sampling step of ``generate``: its processors, then multinomial (or the
    argmax when greedy), on torch tensors made from the same rows."""
    import torch
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        MinPLogitsWarper,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    torch.set_num_threads(1)
    steps = LogitsProcessorList()
    if params.repetition_penalty != 1.0:
        steps.append(RepetitionPenaltyLogitsProcessor(params.repetition_penalty))
    if params.temperature not in (0.0, 1.0):
        steps.append(TemperatureLogitsWarper(params.temperature))
    if params.top_k > 0:
        steps.append(TopKLogitsWarper(params.top_k))
    if params.top_p < 1.0:
        steps.append(TopPLogitsWarper(params.top_p))
    if params.min_p > 0.0:
        steps.append(MinPLogitsWarper(params.min_p))
    ids: Any = torch.from_numpy(history)[None, :]  # (1, N) int64
    generator = torch.Generator().manual_seed(1)

    def pick(row: np.ndarray) -> int:
        scores = steps(ids, torch.from_numpy(row)[None, :])
        if params.temperature == 0.0:
            return int(scores.argmax())
        return int(torch.multinomial(scores.softmax(-1), 1, generator=generator))

    return pick


def format_report(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'vocab':>7}  {'setting':<40} {'engine us':>10} {'transformers us':>15} {'ratio':>6}"
    ]
    for r in rows:
        peer = r.get("transformers_us")
        ratio = f"{peer / r['engine_us']:.1f}x" if peer else "-"
        peer_text = f"{peer:.0f}" if peer else "-"
        us = r["engine_us"]
        lines.append(f"{r['vocab']:>7}  {r['setting']:<40} {us:>10.0f} {peer_text:>15} {ratio:>6}")
    lines.append("per token, best of the rounds; ratio: transformers' time over the engine's")
    return "\n".join(lines)
