"""`python -m bench depth`: greedy decode speed at a context depth, the engine next to llama.cpp.

Owns one table: for each ``--contexts`` depth N (100 and 2,000 by default: a fresh chat and a
long one), each contender prefills the same fixed N-token prompt (`bench.measure.prompt_ids`)
and then times ``--tokens`` decode steps of one token each (logits only, no sampling: the same
work on both engines; the ids fed are ``i % 1000 + 10``). Figures per depth and contender:
decode tokens/s of the median step and of the mean step, and the prompt's prefill tokens/s.
The prompt goes in one call (the engine's ``extend``, llama.cpp's ``eval`` in its 512-token
batches), not in the generate loop's chunks: `bench.prefill` owns the prefill figures users see.

Contenders, each in its own fresh process (one cannot warm the other; each warms up once on
other ids): the engine (its fast-path runner, `engine.runners.fast_open.fast_runner_or_reason`,
reset between depths; a file the fast path declines reports why) and llama.cpp
(llama-cpp-python, a fresh ``Llama`` per depth with ``n_ctx`` = N + tokens + 16, ``n_threads``
the physical cores, ``n_batch`` 512) with its default OpenMP wait policy and with
``OMP_WAIT_POLICY=passive``; the better of the two is the peer figure (the ratio's
denominator, per figure). ``--rounds R`` runs the contenders R times in an order that rotates
each round and reports each contender's median and every round's ratio with their median: on
a shared machine speed drifts by ±20 % within minutes, and a ratio taken within one round
survives that drift. Figures only: nothing asserts a timing.

Does not own the model files (`bench.open.resolve_model`, `bench.synthetic`), how a child is
started (`bench.contention.run_child`) or the prompt (`bench.measure`).
``python -m bench.depth KIND FILE CONTEXTS TOKENS`` is the child (KIND: engine or llama).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.contention import rotated, run_child

CONTENDERS = {  # name → (child kind, extra environment)
    "engine": ("engine", {}),
    "llama.cpp": ("llama", {}),
    "llama.cpp passive": ("llama", {"OMP_WAIT_POLICY": "passive"}),
}
LLAMAS = {"llama.cpp": "default", "llama.cpp passive": "passive"}  # name → OpenMP wait policy
FIGURES = ("decode_tokens_per_s", "decode_mean_tokens_per_s", "prefill_tokens_per_s")
MAX_CONTEXT = 32768
DEFAULT_CONTEXTS = "100,2000"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("depth", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--model", help="bundled (default), a .gguf path or synthetic:ARCH:PLAN")
    p.add_argument(
        "--synthetic", metavar="ARCH:PLAN", help="a random real-size file of bench.synthetic"
    )
    p.add_argument(
        "--contexts",
        default=DEFAULT_CONTEXTS,
        help=f"prompt depths in tokens, comma-separated (1..{MAX_CONTEXT}; default 100,2000)",
    )
    p.add_argument("--tokens", type=int, default=64, help="timed decode steps per depth")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="alternating rounds, each contender a fresh process (medians)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from bench.peers import llama_cpp_available
    from engine.errors import InvalidParamsError
    from engine.runners.session_options import physical_cores

    contexts = context_depths(args.contexts)
    if args.tokens < 1 or args.rounds < 1:
        raise InvalidParamsError(
            f"--tokens and --rounds must be >= 1, got {args.tokens} and {args.rounds}"
        )
    model, path = model_file(args.model, args.synthetic)
    have_llama = llama_cpp_available()
    rounds: list[dict[str, dict[str, Any]]] = []
    for r in range(args.rounds):  # a rotating order: no contender always runs first
        results: dict[str, dict[str, Any]] = {}
        for name in rotated(list(CONTENDERS), r):
            kind, env = CONTENDERS[name]
            if kind == "llama" and not have_llama:
                from bench.measure import NOT_INSTALLED

                results[name] = {"error": NOT_INSTALLED}
                continue
            command = [sys.executable, "-m", "bench.depth", kind, str(path),
                       ",".join(map(str, contexts)), str(args.tokens)]  # fmt: skip
            results[name] = run_child(command, kind, env)
            if not args.json:
                print(f"  ... round {r + 1}: {name} done", file=sys.stderr, flush=True)
        rounds.append({name: results[name] for name in CONTENDERS})
    report = {
        "model": model, "file": str(path), "contexts": contexts, "tokens": args.tokens,
        "rounds": args.rounds, "threads": physical_cores(), "cpus": os.cpu_count(),
        "rows": [merge_rounds(n, rounds) for n in contexts], "runs": rounds,
    }  # fmt: skip
    print(json.dumps(report) if args.json else table(report))
    return 0


def context_depths(text: str) -> list[int]:
    """``--contexts`` as depths, in order without repeats; InvalidParamsError (one line) else."""
    from bench.gpu import prompt_lengths

    return list(dict.fromkeys(prompt_lengths(text, "--contexts", MAX_CONTEXT, "100,2000")))


def model_file(model: str | None, synthetic: str | None) -> tuple[str, Path]:
    """The row's name and its .gguf: ``--synthetic ARCH:PLAN`` or ``--model`` (bundled)."""
    from bench.open import resolve_model
    from engine.errors import InvalidParamsError

    if synthetic is None:
        return model or "bundled", resolve_model(model or "bundled")
    if model is not None:
        raise InvalidParamsError("give --model or --synthetic, not both")
    from bench.synthetic import parse_spec, synthetic_model

    arch, _, plan = synthetic.partition(":")
    pairs = parse_spec(f"{arch}:{plan or 'Q4_K_M'}")  # unknown names: its one line
    if len(pairs) != 1:
        raise InvalidParamsError(f"--synthetic wants one ARCH:PLAN, not {synthetic!r}")
    return f"synthetic:{pairs[0][0]}:{pairs[0][1]}", synthetic_model(*pairs[0])


def merge_rounds(n: int, rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """One depth's row: each contender's median figures over the rounds (its first error where
    no round measured it), llama.cpp's better policy per figure (``llama.cpp best``: the
    medians' maximum and which policy gave it), and the engine's decode over llama.cpp's
    better policy in each round (``ratios``) with their median (``ratio``)."""
    key = str(n)
    row: dict[str, Any] = {"context": n}
    for name in CONTENDERS:
        measured = [r[name]["contexts"][key] for r in rounds if key in r[name].get("contexts", {})]
        if measured:
            row[name] = {f: statistics.median(m[f] for m in measured) for f in FIGURES}
        else:
            errors = (r[name] for r in rounds if "error" in r[name])
            row[name] = next(errors, {"error": "no figure"})
    best: dict[str, Any] = {}
    for figure in FIGURES:
        value, policy = better_llama(row, figure)
        best[figure] = value
        best[f"{figure}_policy"] = policy
    row["llama.cpp best"] = best
    ratios = []
    for r in rounds:
        mine = r["engine"].get("contexts", {}).get(key, {}).get("decode_tokens_per_s")
        theirs, _ = better_llama({k: r[k].get("contexts", {}).get(key, {}) for k in LLAMAS},
                                 "decode_tokens_per_s")  # fmt: skip
        if mine and theirs:
            ratios.append(round(mine / theirs, 3))
    row["ratios"] = ratios
    row["ratio"] = statistics.median(ratios) if ratios else None
    return row


def better_llama(sides: dict[str, Any], figure: str) -> tuple[float | None, str | None]:
    """llama.cpp's better policy for ``figure`` among ``sides`` (name → figures): its value
    and the policy ("default" or "passive"), or (None, None) where neither measured it."""
    found = [(float(sides[k][figure]), policy) for k, policy in LLAMAS.items()
             if (sides.get(k) or {}).get(figure)]  # fmt: skip
    return max(found) if found else (None, None)


def table(report: dict[str, Any]) -> str:
    """One line per depth: decode (median step, mean step in brackets) and prefill tokens/s."""
    head = [
        f"{report['model']}: greedy decode at depth, {report['tokens']} steps per depth, "
        f"{report['rounds']} round(s), {report['threads']} threads",
        "tokens/s: median step (mean step); x: Hearth decode / llama.cpp's better policy "
        "(median of the rounds' ratios); llama prefill: its better policy",
    ]
    cols = ["context", "Hearth decode", "llama default", "llama passive", "x",
            "Hearth prefill", "llama prefill"]  # fmt: skip
    lines = [*head, " | ".join(f"{c:>14}" if i else f"{c:>7}" for i, c in enumerate(cols))]
    lines.append("-" * len(lines[-1]))
    notes = []
    for row in report["rows"]:
        ratio = row.get("ratio")
        cells = [
            f"{row['context']:>7}",
            *(f"{_decode(row[name]):>14}" for name in CONTENDERS),
            f"{f'{ratio:.2f}x' if ratio else '-':>14}",
            f"{_num(row['engine'].get('prefill_tokens_per_s')):>14}",
            f"{_num(row['llama.cpp best'].get('prefill_tokens_per_s')):>14}",
        ]
        lines.append(" | ".join(cells))
        if len(row["ratios"]) > 1:
            low, high = min(row["ratios"]), max(row["ratios"])
            notes.append(f"  x range at {row['context']}: {low:.2f}-{high:.2f} over "
                         f"{len(row['ratios'])} rounds")  # fmt: skip
        notes += [f"  {name} at {row['context']}: {row[name]['error']}"
                  for name in CONTENDERS if "error" in row[name]]  # fmt: skip
    return "\n".join(lines + list(dict.fromkeys(notes)))


def _decode(side: dict[str, Any]) -> str:
    median, mean = side.get("decode_tokens_per_s"), side.get("decode_mean_tokens_per_s")
    return f"{median:.1f} ({mean:.1f})" if median and mean else "-"


def _num(value: float | None) -> str:
    return f"{value:.1f}" if value else "-"


# ------------------------------------------------------------------------ the child


def _engine_child(path: str, contexts: list[int], tokens: int) -> dict[str, Any]:
    """The fast-path runner: warmed up once, reset before each depth."""
    from bench.measure import WARMUP_IDS
    from engine.runners.fast_open import fast_runner_or_reason

    runner, reason = fast_runner_or_reason(path)
    if runner is None:
        raise SystemExit(f"the fast path declined {path}: {reason}")

    def step(ids: list[int]) -> None:
        runner.extend(ids, last_only=True)

    step(WARMUP_IDS)
    step(WARMUP_IDS[:1])
    figures = {}
    for n in contexts:
        runner.reset()
        figures[str(n)] = _timed(step, n, tokens)
    return {"contexts": figures}


def _llama_child(path: str, contexts: list[int], tokens: int) -> dict[str, Any]:
    """llama.cpp: a fresh ``Llama`` per depth, sized to it, warmed up once."""
    from llama_cpp import Llama

    from bench.measure import WARMUP_IDS
    from engine.runners.session_options import physical_cores

    threads = physical_cores()
    figures = {}
    for n in contexts:
        llm = Llama(path, n_ctx=n + tokens + 16, n_threads=threads, n_batch=512,
                    verbose=False)  # fmt: skip
        llm.eval(WARMUP_IDS)
        llm.eval(WARMUP_IDS[:1])
        llm.reset()  # the next eval overwrites the warm-up's cache
        figures[str(n)] = _timed(llm.eval, n, tokens)
        llm.close()
    policy = os.environ.get("OMP_WAIT_POLICY", "default").lower()
    return {"contexts": figures, "threads": threads, "policy": policy}


def _timed(step: Callable[[list[int]], Any], n: int, tokens: int) -> dict[str, float]:
    """Prefill ``prompt_ids(n)`` in one call, then ``tokens`` timed one-token steps."""
    from bench.measure import prompt_ids

    prompt = prompt_ids(n)
    began = time.perf_counter()
    step(prompt)
    prefill_s = time.perf_counter() - began
    times = []
    for i in range(tokens):
        began = time.perf_counter()
        step([i % 1000 + 10])
        times.append(time.perf_counter() - began)
    return {
        "decode_tokens_per_s": 1.0 / statistics.median(times),
        "decode_mean_tokens_per_s": tokens / sum(times),
        "prefill_tokens_per_s": n / prefill_s,
    }


if __name__ == "__main__":
    kind_, path_, contexts_, tokens_ = sys.argv[1:5]
    measure = _engine_child if kind_ == "engine" else _llama_child
    print(json.dumps(measure(path_, context_depths(contexts_), int(tokens_))))
