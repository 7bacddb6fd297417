"""`python -m bench draft-pairing`: would a small draft model speed up a bigger one here?

Owns the measurement behind one catalogue decision (issue 32: "a draft-model pairing only if
it wins on this machine"). For each of `bench.speculation`'s reply kinds (document question,
code edit, chat) it measures, on the engine's default path:
- the target's greedy reply of ``--tokens`` tokens and its plain decode speed;
- the draft's agreement with it: the draft reads the prompt and the target's reply in one
  run (teacher forcing) and its argmax at each reply position is compared with the target's
  token there. While they agree, a draft model's greedy draft IS those tokens, so the
  agreement vector fixes what each draft-verify cycle would accept;
- the draft's own plain decode speed, and the target's c(k) (a 1 + k-row verify in plain
  steps, `bench.speculation.verify_cost`).
From these it replays draft-model speculation over the real reply (`replay`): each cycle the
draft decodes k ids (k of its steps), the target verifies them in one 1 + k-row forward, and
the accepted run plus the target's own next id are kept. It prints the best fixed k's speed-up
per kind. Both files must share a vocabulary (same tokenizer): checked, else a clear error.
A replay, not a run: what a pairing's engine would reach at best (its draft never costs less
than k plain steps; catch-up and crops are left out), which is what the decision needs.
Figures only: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from typing import Any

KS = tuple(range(1, 9))
COST_KS = (1, 2, 4, 8)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("draft-pairing", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--target", required=True, help="the model people chat with (.gguf)")
    p.add_argument("--draft", required=True, help="the small model that would draft (.gguf)")
    p.add_argument("--tokens", type=int, default=128, help="greedy tokens per reply")
    p.add_argument("--pairs", type=int, default=7, help="timed pairs per k for c(k)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def replay(agree: Sequence[bool], k: int, draft_step: float, verify: float) -> float:
    """Seconds to produce ``len(agree)`` tokens by draft-model speculation with drafts of ``k``.

    ``agree[j]``: the draft's greedy id at reply position j equals the target's. Position 0
    comes from the prompt's prefill either way; each cycle then costs ``k * draft_step +
    verify`` and keeps the drafted run that agrees plus the target's next id."""
    n, pos, seconds = len(agree), 1, 0.0
    while pos < n:
        held = 0
        while held < k and pos + held < n and agree[pos + held]:
            held += 1
        seconds += k * draft_step + verify
        pos += held + 1
    return seconds


def cost_at(cost: dict[int, float], k: int) -> float:
    """c(k) from the measured points, linear between them (and beyond the last)."""
    points = sorted(cost.items())
    for (k0, c0), (k1, c1) in itertools.pairwise(points):
        if k0 <= k <= k1:
            return c0 + (c1 - c0) * (k - k0) / (k1 - k0)
    (k0, c0), (k1, c1) = points[-2], points[-1]
    return c1 + (c1 - c0) * (k - k1) / (k1 - k0)


def speedups(
    agree: Sequence[bool], plain_step: float, draft_step: float, cost: dict[int, float]
) -> dict[int, float]:
    """Plain time over the replay's time, for each draft length in `KS`."""
    plain = (len(agree) - 1) * plain_step
    return {
        k: plain / max(1e-12, replay(agree, k, draft_step, cost_at(cost, k) * plain_step))
        for k in KS
    }


def reply_and_prompt(engine: Any, kind: str, tokens: int) -> tuple[list[int], list[int], float]:
    """The target's greedy reply ids for ``kind``, its prompt ids and its decode tok/s."""
    from bench.speculation import DOCUMENT, PROMPTS, reply_params
    from engine.types import Finished, GenerationRequest, Message, PromptPrepared

    prompt = PROMPTS[kind]
    text = f'<document index="1" name="harbour.txt">\n{DOCUMENT}\n</document>\n\n{prompt}'
    message = Message("user", text if kind == "document" else prompt)
    engine.runner.reset()
    prepared = done = None
    for event in engine.generate(GenerationRequest((message,), reply_params(tokens, 0, 0))):
        if isinstance(event, PromptPrepared):
            prepared = event
        done = event
    assert isinstance(done, Finished) and prepared is not None
    prompt_ids = list(engine.runner.cached_ids[: prepared.prompt_tokens])
    return prompt_ids, list(done.token_ids), done.stats.decode_tokens_per_s


def agreement(draft: Any, prompt_ids: list[int], reply: list[int]) -> list[bool]:
    """Whether the draft's argmax at each reply position equals the reply's id there."""
    runner = draft.runner
    runner.reset()
    guesses = [int(runner.extend(prompt_ids, last_only=True)[0].argmax())]
    for start in range(0, len(reply) - 1, 32):  # all rows, 32 at a time (a 151k head's rows)
        rows = runner.extend(reply[start : min(start + 32, len(reply) - 1)])
        guesses.extend(int(row.argmax()) for row in rows)
    runner.reset()
    return [g == r for g, r in zip(guesses, reply, strict=True)]


def draft_speed(draft: Any, prompt_ids: list[int], tokens: int) -> float:
    """The draft's plain greedy decode tok/s after the same prompt (its own reply)."""
    import time

    runner = draft.runner
    runner.reset()
    logits = runner.extend(prompt_ids, last_only=True)[0]
    start = time.perf_counter()
    for _ in range(tokens):
        logits = runner.extend([int(logits.argmax())], last_only=True)[0]
    seconds = time.perf_counter() - start
    runner.reset()
    return tokens / seconds


def run(args: argparse.Namespace) -> int:
    from bench.speculation import PROMPTS, verify_cost
    from engine.engine import Engine
    from engine.errors import InvalidParamsError

    if args.tokens < 8:
        raise InvalidParamsError(f"--tokens must be >= 8, got {args.tokens}")
    target, draft = Engine(args.target), Engine(args.draft)
    try:
        probe = "Quote the second line: 你好, world — ünïcode"
        if target.tokenize(probe) != draft.tokenize(probe):
            raise InvalidParamsError("the two files tokenize differently: no draft pairing")
        rows: list[dict[str, Any]] = []
        for kind in PROMPTS:
            prompt_ids, reply, target_tps = reply_and_prompt(target, kind, args.tokens)
            agree = agreement(draft, prompt_ids, reply)
            draft_tps = draft_speed(draft, prompt_ids, args.tokens)
            rows.append({"kind": kind, "tokens": len(reply), "target_tok_s": target_tps,
                         "draft_tok_s": draft_tps, "agreement": sum(agree) / len(agree),
                         "agree": agree})  # fmt: skip
        cost = verify_cost(target.runner, COST_KS, args.pairs)
    finally:
        target.close()
        draft.close()
    measured = {int(k): c for k, c in cost["cost"].items()}
    for row in rows:
        gains = speedups(row.pop("agree"), 1 / row["target_tok_s"], 1 / row["draft_tok_s"],
                         measured)  # fmt: skip
        best = max(gains, key=lambda k: gains[k])
        row.update(speedup_by_k={str(k): g for k, g in gains.items()}, best_k=best,
                   best_speedup=gains[best])  # fmt: skip
    report = {"target": args.target, "draft": args.draft, "cost": cost, "rows": rows}
    print(json.dumps(report) if args.json else table(report))
    return 0


def table(report: dict[str, Any]) -> str:
    cost = " ".join(f"c({k})={c:.2f}" for k, c in report["cost"]["cost"].items())
    lines = [f"target {report['target']}, draft {report['draft']}; {cost}",
             f"{'reply':<9} | {'target':>6} | {'draft':>6} | {'agree':>5} | best k | replayed x",
             "-" * 58]  # fmt: skip
    for r in report["rows"]:
        lines.append(
            f"{r['kind']:<9} | {r['target_tok_s']:6.1f} | {r['draft_tok_s']:6.1f} | "
            f"{r['agreement']:5.0%} | {r['best_k']:6d} | {r['best_speedup']:10.2f}"
        )
    return "\n".join(lines)
