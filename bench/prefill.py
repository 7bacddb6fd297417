"""`python -m bench prefill`: prompt tokens/s at document lengths, the engine next to llama.cpp.

Owns one table: for each file (``--models``: bundled, a .gguf, synthetic:ARCH:PLAN of
`bench.synthetic`) and each prompt length (``--prompts``, 512 and 2,000 by default: a
question about an attached document), the best of ``--repeats`` cold prefills, each
contender in its own process: the engine (its fast-path runner, the prompt in the chunks
the generate loop runs, `engine.generate`) and llama.cpp with its default OpenMP policy and
with ``OMP_WAIT_POLICY=passive``, the better of the two taken for the ratio. Both see the
same ids (`bench.measure.prompt_ids`), warmed up once on other ids. Figures only: nothing
asserts a timing. ``--rounds N`` runs the contenders N times, in an order that rotates
each round, and reports each contender's median and the median of the rounds' ratios, with
their range: on a shared machine the speed of both sides drifts by ±10 % within minutes,
and a ratio taken within one round is what survives that drift. ``python -m bench.prefill
KIND FILE LENGTHS REPEATS`` is the child.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from bench.contention import rotated, run_child
from bench.gpu import prompt_lengths, resolve

CONTENDERS = {"engine": ("engine", {}), "llama.cpp": ("llama", {}),
              "llama.cpp passive": ("llama", {"OMP_WAIT_POLICY": "passive"})}  # fmt: skip
WARMUP = [500 + 37 * i for i in range(8)]


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("prefill", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--models", default="bundled", help="comma-separated files (see above)")
    p.add_argument("--prompts", default="512,2000", help="prompt lengths, comma-separated")
    p.add_argument("--repeats", type=int, default=2, help="prefills per length (best kept)")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="alternating rounds, each contender a fresh process (medians)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from engine.errors import InvalidParamsError

    lengths = prompt_lengths(args.prompts)
    if args.repeats < 1 or args.rounds < 1:
        raise InvalidParamsError(
            f"--repeats and --rounds must be >= 1, got {args.repeats} and {args.rounds}"
        )
    rows = []
    names = list(CONTENDERS)
    for model in (m.strip() for m in args.models.split(",") if m.strip()):
        path = resolve(model)
        rounds = []
        for r in range(args.rounds):  # a rotating order: no side always runs first
            results = {}
            for name in rotated(names, r):
                kind, env = CONTENDERS[name]
                command = [sys.executable, "-m", "bench.prefill", kind, path,
                           ",".join(map(str, lengths)), str(args.repeats)]  # fmt: skip
                results[name] = run_child(command, kind, env)
            rounds.append(results)
        rows.append(merge_rounds(model, rounds, lengths))
    report = {"prompts": lengths, "cpus": os.cpu_count(), "rows": rows}
    print(json.dumps(report) if args.json else table(report))
    return 0


def merge_rounds(model: str, rounds: list[dict[str, Any]], lengths: list[int]) -> dict[str, Any]:
    """One table row from the rounds: each contender's median tokens/s per length (its
    error where no round measured it), and per length the rounds' ratios (engine over
    llama.cpp's better policy in the same round) under ``ratios``."""
    row: dict[str, Any] = {"model": model}
    for name in CONTENDERS:
        figures = {str(n): [f for r in rounds if (f := r[name].get("prefill", {}).get(str(n)))]
                   for n in lengths}  # fmt: skip
        if any(figures.values()):
            row[name] = {"prefill": {n: statistics.median(f) for n, f in figures.items() if f}}
        else:
            errors = (r[name] for r in rounds if "error" in r[name])
            row[name] = next(errors, {"error": "no figure"})
    row["ratios"] = {}
    for n in lengths:
        ratios = []
        for r in rounds:
            mine, theirs = r["engine"].get("prefill", {}).get(str(n)), best_llama(r, n)
            if mine and theirs:
                ratios.append(round(mine / theirs, 3))
        row["ratios"][str(n)] = ratios
    row["rounds"] = rounds
    return row


def best_llama(row: dict[str, Any], n: int) -> float | None:
    """llama.cpp's better policy at length ``n`` (None when neither measured it)."""
    figures = [row.get(k, {}).get("prefill", {}).get(str(n)) for k in CONTENDERS if k != "engine"]
    return max((f for f in figures if f), default=None)


def table(report: dict[str, Any]) -> str:
    """One line per file: the engine's and llama.cpp's (better policy) tokens/s per length."""
    lengths: list[int] = report["prompts"]
    cols = " | ".join(f"{'engine ' + str(n):>12} | {'llama ' + str(n):>11} | {'x':>5}"
                      for n in lengths)  # fmt: skip
    lines = ["prefill tokens/s (best of the repeats, median of the rounds; x: the median of the"
             " rounds' ratios; llama.cpp: its better OpenMP policy)",
             f"{'model':<32} | {cols}"]  # fmt: skip
    lines.append("-" * len(lines[1]))
    for row in report["rows"]:
        engine = row.get("engine", {})
        cells = []
        for n in lengths:
            mine, theirs = engine.get("prefill", {}).get(str(n)), best_llama(row, n)
            ratios = row.get("ratios", {}).get(str(n))
            if not ratios:
                ratios = [mine / theirs] if mine and theirs else []
            x = f"{statistics.median(ratios):5.2f}" if ratios else f"{'-':>5}"
            cells.append(f"{_num(mine):>12} | {_num(theirs):>11} | {x}")
        lines.append(f"{row['model'][-32:]:<32} | " + " | ".join(cells))
        spread = [f"{n}: {min(r):.2f}-{max(r):.2f} over {len(r)} rounds"
                  for n, r in row.get("ratios", {}).items() if len(r) > 1]  # fmt: skip
        if spread:
            lines.append("  x range " + ", ".join(spread))
        errors = [f"  {k}: {v['error']}" for k, v in row.items() if isinstance(v, dict)
                  and "error" in v]  # fmt: skip
        lines += errors
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return f"{value:.1f}" if value else "-"


# ------------------------------------------------------------------------ the child


def _engine_prefill(path: str, lengths: list[int], repeats: int) -> dict[str, Any]:
    from bench.measure import prompt_ids
    from engine.generate import PREFILL_CHUNK
    from engine.runners.fast_open import fast_runner_or_reason

    runner, reason = fast_runner_or_reason(path, window=max(lengths) + 16)
    if runner is None:
        raise SystemExit(f"the fast path declined {path}: {reason}")
    chunk = getattr(runner, "prefill_chunk", None) or PREFILL_CHUNK

    def prefill(ids: list[int]) -> None:  # the chunks engine.generate runs
        starts = list(range(0, len(ids), chunk))
        if len(starts) > 1 and len(ids) - starts[-1] < 2:
            starts.pop()
        for start, end in zip(starts, [*starts[1:], len(ids)], strict=True):
            if end < len(ids):  # engine.generate: no head on the runs before the last
                runner.advance(ids[start:end])
            else:
                runner.extend(ids[start:end], last_only=True)

    return _timed(prefill, runner.reset, lengths, repeats, prompt_ids)


def _llama_prefill(path: str, lengths: list[int], repeats: int) -> dict[str, Any]:
    from llama_cpp import Llama

    from bench.measure import prompt_ids
    from engine.runners.session_options import physical_cores

    llm = Llama(path, n_ctx=max(lengths) + 16, n_threads=physical_cores(), n_batch=512,
                verbose=False)  # fmt: skip
    return _timed(llm.eval, llm.reset, lengths, repeats, prompt_ids)


def _timed(prefill: Any, reset: Any, lengths: list[int], repeats: int, ids: Any) -> dict[str, Any]:
    prefill(WARMUP)
    reset()
    out = {}
    for n in lengths:
        best = 0.0
        for _ in range(repeats):
            reset()
            began = time.perf_counter()
            prefill(ids(n))
            best = max(best, n / (time.perf_counter() - began))
        out[str(n)] = best
    return {"prefill": out}


if __name__ == "__main__":
    kind_, path_, lengths_, repeats_ = sys.argv[1:5]
    measure = _engine_prefill if kind_ == "engine" else _llama_prefill
    print(json.dumps(measure(path_, prompt_lengths(lengths_), int(repeats_))))
