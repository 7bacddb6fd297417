"""`python -m bench mtp`: what Qwen3.5's MTP drafting costs, and the acceptance it must reach.

Owns one measurement on one qwen35 file with an MTP block (``--model``; a synthetic
real-shape file, e.g. ``synth-qwen35-Q4_K_M.gguf`` from ``python -m bench engine --synthetic
qwen35:Q4_K_M``, has one with random weights): after a prompt of ``--context`` tokens, paired
and alternating, the median time of
- a plain decode step (a 1-token forward),
- a verify forward of [token, draft] whose draft is then rejected (the 2-row run, the rollback
  of the recurrent state to the state after its first row, and the KV cut),
- a drafter call (the MTP block's entry for the newest position and its head: one draft).
Per cycle drafting costs c2 + d plain steps (c2: the verify, d: the draft) and makes 1 + a
tokens at acceptance a, so it breaks even at a = c2 + d - 1 and gains (1 + a) / (c2 + d).
Random weights draft nonsense, so the acceptance itself is not measured here: that needs a
real Qwen3.5 file. Figures only: nothing asserts a timing. Does not own the drafter
(`engine.mtp`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

ACCEPTANCES = (0.5, 0.6, 0.7, 0.8)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("mtp", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--model", required=True, help="a qwen35 .gguf with an MTP block")
    p.add_argument("--context", type=int, default=512, help="prompt tokens before timing")
    p.add_argument("--pairs", type=int, default=15, help="timed rounds")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from engine.engine import Engine
    from engine.errors import InvalidParamsError
    from engine.mtp.drafter import mtp_drafter

    engine = Engine(args.model)
    try:
        drafter = mtp_drafter(engine.runner)
        if drafter is None:
            raise InvalidParamsError(f"{args.model}: no MTP block the fast path can draft with")
        report = measure(engine.runner, drafter, args.context, args.pairs)
    finally:
        engine.close()
    report |= {"model": args.model, "load": os.getloadavg()}
    print(json.dumps(report) if args.json else table(report))
    return 0


def measure(runner: Any, drafter: Any, context: int, pairs: int) -> dict[str, Any]:
    """Median seconds of a plain step, a rejected verify and a draft (see the docstring)."""
    vocab = runner.vocab_size
    prompt = [(7 * i + 3) % vocab for i in range(context)]
    runner.reset()
    runner.extend(prompt, last_only=True)
    ids = list(prompt)
    begin = time.perf_counter()
    drafter([*ids, 11], 1)  # the drafter catches up on the prompt: its entries for it
    catch_up = time.perf_counter() - begin
    plain, verify, draft = [], [], []
    for r in range(pairs):
        token = (13 * r + 5) % vocab
        t0 = time.perf_counter()
        runner.extend([token], last_only=True)  # a plain step
        t1 = time.perf_counter()
        runner.crop(len(ids))  # undone: the state before it is the other buffer set's
        t2 = time.perf_counter()
        drafted = drafter([*ids, token], 1)
        t3 = time.perf_counter()
        runner.extend([token, drafted[0] if drafted else 0])
        runner.crop(len(ids) + 1)  # the draft was wrong: roll back to after `token`
        t4 = time.perf_counter()
        ids.append(token)
        plain.append(t1 - t0)
        draft.append(t3 - t2)
        verify.append(t4 - t3)
    step = statistics.median(plain)
    c2, d = statistics.median(verify) / step, statistics.median(draft) / step
    return {
        "context": context, "pairs": pairs, "plain_step_ms": 1e3 * step,
        "verify_ms": 1e3 * statistics.median(verify), "draft_ms": 1e3 * statistics.median(draft),
        "catch_up_ms": 1e3 * catch_up, "c2": c2, "d": d, "break_even_acceptance": c2 + d - 1,
        "speedup_at": {str(a): (1 + a) / (c2 + d) for a in ACCEPTANCES},
    }  # fmt: skip


def table(r: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.2f}" for x in r["load"])
    gains = "  ".join(f"a={a}: {g:.2f}x" for a, g in r["speedup_at"].items())
    return "\n".join(
        [
            f"MTP drafting on {r['model']} after {r['context']} tokens ({r['pairs']} rounds, "
            f"load {load})",
            f"  plain step {r['plain_step_ms']:.1f} ms; verify [token, draft] + rollback "
            f"{r['verify_ms']:.1f} ms (c2 = {r['c2']:.2f}); draft {r['draft_ms']:.1f} ms "
            f"(d = {r['d']:.2f}); prompt catch-up {r['catch_up_ms']:.0f} ms",
            f"  break-even acceptance {r['break_even_acceptance']:.2f}; speed-up {gains}",
        ]
    )
