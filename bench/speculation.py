"""`python -m bench speculation`: replies plain and with prompt lookup, where it pays.

Owns one table on one model (``--model``, the bundled SmolLM2 by default): for each prompt
kind a reply of ``--tokens`` tokens, plain then speculative (`engine.speculative`, prompt
lookup, verified in one forward), on the engine's default path, each from a cold cache.
Greedy by default; with ``--temperature T``, seeded sampling (``--seed``) at the app's other
"Balanced" settings (top-k 40, top-p 0.95, min-p 0.05), where a drafted id holds only if the
draw picks it. Kinds: ``document`` (a question about an attached document, asking for its sentences
as they are, the app's layout: the document first, `app.chat.attachments.with_documents`),
``code`` (a code edit: the function given back changed), ``chat`` (no source to quote: where
speculation must not cost). Columns: decode tokens/s of each, the speed-up, the drafted ids'
acceptance (accepted / drafted), forwards per token, and whether the two replies are the same
ids (they must be: a 1-token step rounds as a row of a verify forward, `engine.speculative`'s
docstring; tests assert it). ``--cost`` prints c(k) instead: what a verify forward of 1 + k rows
costs in plain steps (paired, alternating, median), on a cache of about 700 tokens: drafting
breaks even at an acceptance of (c(k) - 1) / k. ``--drafter lookup`` leaves out Qwen3.5's
MTP drafter (`engine.mtp`), which a file with an MTP block drafts from by default, so its
drafts come from the prompt as on any other model; the acceptance and whether the ledger
switched drafting off (`engine.speculative.SpeedLedger`) come from the loop's verifier. On a
hybrid a rejected draft runs its accepted ids again (the recurrent state's rollback), and
those runs count as forwards. Figures only: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DOCUMENT = (
    "Harbour notes, spring.\n\nThe lighthouse keeper, Mara Quill, climbs the ninety-two steps of "
    "the Kestrel Point light every evening at six. She trims the wick, polishes the lens and "
    "writes the weather in her logbook: wind from the west, a heavy swell, rain after midnight. "
    "On the first of March she found a green bottle on the shingle below the tower. Inside was a "
    "letter from a girl in Bergen who asked whoever found it to write back and describe the sea "
    "where they live. The supply boat comes on Thursdays when the sea allows; in February it "
    "missed three weeks running, and Mara rationed the lamp oil by lighting the lens an hour "
    "later each night."
)
PROMPTS = {
    "document": (
        "Quote, word for word, the sentences of the document that describe the bottle "
        "and the supply boat."
    ),
    "code": (
        "Here is a Python function:\n\ndef total(items):\n    result = 0\n    for item in items:\n"
        "        result = result + item.price * item.quantity\n    return result\n\n"
        "Rewrite it to skip items whose quantity is zero and add type hints. Give the whole "
        "function."
    ),
    "chat": "Name five things people like about autumn, one line each.",
}


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("speculation", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--model", default="bundled", help="'bundled' or a .gguf")
    p.add_argument("--tokens", type=int, default=128, help="tokens per reply")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="0: greedy; else seeded sampling (the app's Balanced is 0.7)",
    )
    p.add_argument("--seed", type=int, default=11, help="the sampler's seed (--temperature > 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--cost", action="store_true", help="print c(k) (verify cost in plain steps)")
    p.add_argument("--pairs", type=int, default=9, help="--cost: timed pairs per k")
    p.add_argument("--drafter", choices=("auto", "lookup"), default="auto",
                   help="lookup: prompt lookup even where the file has an MTP block")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from engine.engine import Engine
    from engine.errors import InvalidParamsError

    if args.tokens < 1:
        raise InvalidParamsError(f"--tokens must be >= 1, got {args.tokens}")
    params = reply_params(args.tokens, args.temperature, args.seed)
    engine = Engine(args.model)
    try:
        if args.cost:
            cost = verify_cost(engine.runner, COST_KS, args.pairs)
            report: dict[str, Any] = {"model": args.model, "backend": engine.info.backend, **cost}
            print(json.dumps(report) if args.json else cost_table(report))
            return 0
        with watching(args.drafter) as made:
            rows = [measure(engine, kind, prompt, params, made) for kind, prompt in
                    PROMPTS.items()]  # fmt: skip
    finally:
        engine.close()
    report = {"model": args.model, "backend": engine.info.backend, "drafter": args.drafter,
              "temperature": params.temperature, "seed": params.seed, "rows": rows}  # fmt: skip
    print(json.dumps(report) if args.json else table(report))
    return 0


COST_KS = (1, 2, 4, 8)


def verify_cost(runner: Any, ks: tuple[int, ...], pairs: int) -> dict[str, Any]:
    """c(k): seconds of a 1 + k-row forward over a plain 1-row step, each pair timed back to
    back in alternating order on the same ~700-token cache (cropped back after each), the
    median over ``pairs``; the machine's load moves both sides of a pair alike."""
    runner.reset()
    vocab = max(16, int(getattr(runner, "vocab_size", 0) or 1000))
    context = [(37 * i + 11) % min(vocab, 30000) + 10 for i in range(700)]
    runner.extend(context, last_only=True)
    base = len(runner.cached_ids)

    def timed(ids: list[int]) -> float:
        start = time.perf_counter()
        runner.extend(ids, last_only=len(ids) == 1)
        seconds = time.perf_counter() - start
        runner.crop(base)
        return seconds

    for k in ks:  # warm every shape once
        timed(context[: 1 + k])
    plain: list[float] = []
    ratios: dict[int, list[float]] = {k: [] for k in ks}
    for i in range(pairs):
        for k in ks:
            one, many = [context[i]], context[i : i + 1 + k]
            if (i + k) % 2:
                t1, tk = timed(one), timed(many)
            else:
                tk, t1 = timed(many), timed(one)
            plain.append(t1)
            ratios[k].append(tk / t1)
    runner.reset()
    return {
        "plain_ms": 1000 * statistics.median(plain),
        "cost": {str(k): statistics.median(v) for k, v in ratios.items()},
    }


def cost_table(report: dict[str, Any]) -> str:
    cost = report["cost"]
    head = f"{report['model']} ({report['backend']}): a 1 + k-row verify in plain steps"
    cols = " | ".join(f"c({k})" for k in cost)
    even = " / ".join(f"{(c - 1) / int(k):.0%}" for k, c in cost.items())
    vals = " | ".join(f"{c:4.2f}" for c in cost.values())
    lines = [head, f"1 row ms | {cols} | break-even acceptance"]
    return "\n".join([*lines, f"{report['plain_ms']:.1f} | {vals} | {even}"])


@contextmanager
def watching(drafter: str) -> Iterator[list[Any]]:
    """The verifiers the loop makes while inside (for their counts); with ``drafter``
    "lookup", no MTP drafter (prompt lookup on a Qwen3.5 file with an MTP block)."""
    from engine import generate

    loop: Any = generate  # its names swapped for the run (as the tests' monkeypatch does)
    made: list[Any] = []
    verifier_class, mtp = loop.DraftVerifier, loop.mtp_drafter

    def verifier(*args: Any, **kwargs: Any) -> Any:
        made.append(verifier_class(*args, **kwargs))
        return made[-1]

    loop.DraftVerifier = verifier
    if drafter == "lookup":
        loop.mtp_drafter = lambda runner: None
    try:
        yield made
    finally:
        loop.DraftVerifier, loop.mtp_drafter = verifier_class, mtp


def reply_params(tokens: int, temperature: float, seed: int) -> Any:
    """Greedy replies of ``tokens`` tokens, or seeded ones at the app's Balanced filters."""
    from engine.types import SamplingParams

    if temperature == 0:
        return SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=tokens)
    return SamplingParams(temperature=temperature, seed=seed, max_new_tokens=tokens)


def measure(
    engine: Any, kind: str, prompt: str, params: Any, made: list[Any] | None = None
) -> dict[str, Any]:
    """One kind's plain and speculative replies (``params``), each from a cold cache
    (``made``: the verifiers `watching` collects, for the acceptance)."""
    from engine.types import Finished, GenerationRequest, Message

    text = f'<document index="1" name="harbour.txt">\n{DOCUMENT}\n</document>\n\n{prompt}'
    message = Message("user", text if kind == "document" else prompt)
    out: dict[str, Any] = {"kind": kind}
    replies = {}
    for speculative in (False, True):
        engine.speculative = speculative
        engine.runner.reset()
        forwards: list[int] = []
        engine.runner.extend_calls = forwards
        done = None
        for event in engine.generate(GenerationRequest((message,), params, f"spec-{kind}")):
            done = event
        engine.runner.extend_calls = None
        assert isinstance(done, Finished)
        replies[speculative] = done
        side = "speculative" if speculative else "plain"
        out[side] = done.stats.decode_tokens_per_s
        decode_forwards = forwards[1:]  # after the prefill's
        drafted = sum(n - 1 for n in decode_forwards if n > 1)
        out[f"{side}_forwards_per_token"] = len(decode_forwards) / max(1, len(done.token_ids))
        if speculative:
            out["drafted"] = drafted
            verifier = made[-1] if made else None
            out["verifier"] = verifier is not None  # the loop speculated at all
            if verifier is not None:
                out["accepted"] = verifier.accepted
                out["acceptance"] = verifier.accepted / max(1, verifier.drafted)
                out["switched_off"] = verifier.switched_off
                out["mtp"] = verifier.drafter is not None
            if made:
                made.clear()
    engine.speculative = False
    plain, spec = replies[False], replies[True]
    out["speedup"] = out["speculative"] / out["plain"] if out["plain"] else None
    out["tokens"] = len(spec.token_ids)
    out["identical"] = plain.token_ids == spec.token_ids
    return out


def table(report: dict[str, Any]) -> str:
    temperature = report.get("temperature", 0.0)
    how = "greedy" if not temperature else f"temperature {temperature}, seed {report['seed']}"
    head = (f"{report['model']} ({report['backend']}, drafter {report.get('drafter', 'auto')}): "
            f"{how}, decode tok/s, plain and speculative")  # fmt: skip
    lines = [head, f"{'reply':<9} | {'plain':>6} | {'spec':>6} | {'x':>5} | "
             f"{'fwd/token':>9} | {'drafted':>7} | {'accept':>6} | ledger | same ids"]  # fmt: skip
    lines.append("-" * len(lines[1]))
    for r in report["rows"]:
        accept = f"{r['acceptance']:6.0%}" if "acceptance" in r else f"{'-':>6}"
        ledger = "off" if r.get("switched_off") else ("on" if r.get("verifier") else "none")
        lines.append(
            f"{r['kind']:<9} | {r['plain']:6.1f} | {r['speculative']:6.1f} | "
            f"{r['speedup'] or 0:5.2f} | {r['speculative_forwards_per_token']:9.2f} | "
            f"{r['drafted']:7d} | {accept} | {ledger:<6} | {'yes' if r['identical'] else 'no'}"
        )
    return "\n".join(lines)
