"""`python -m bench contention --beside`: a reply's decode speed, the process started beside
each neighbour.

Owns the grid of that mode: for each contender (`bench.contention.CONTENDERS`) and each
neighbour (`bench.neighbours`), the neighbour is started, then a fresh process of the
contender opens the file, prefills 32 tokens and writes one ``--tokens``-step reply; its
figure is tokens over the steps' total time (every step counts: a governor that starts
wrong pays here, as a user's reply does), with the median step and the first eight steps'
milliseconds beside it. The table adds the engine's ratio to llama.cpp's better policy per
column. ``--rounds N`` runs every contender N times beside each neighbour, in an order that
rotates each round: a cell is the contender's median, the ratio the median of the rounds' own
ratios, with their range below (a shared machine's speed drifts ±10 % within minutes, on
both sides; a ratio taken within one round survives that). The engine's later rounds start
where its last reply settled (`engine.kernels.pressure.ThreadMemory`), as a user's next reply
does. ``python -m bench.contention_beside KIND FILE TOKENS`` is the reply child. Figures only:
nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from bench.contention import CONTENDERS, contenders, neighbours, rotated, run_child
from bench.neighbours import TITLES, running

LLAMA = ("llama.cpp", "llama.cpp passive")


def beside_report(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every contender's reply beside every neighbour asked for, ``args.rounds`` times:
    {contender: {neighbour: merged cell}}, and per neighbour the rounds' ratios."""
    names = contenders(args)
    cells: dict[str, dict[str, Any]] = {name: {} for name in names}
    round_ratios: dict[str, list[float]] = {}
    for neighbour in neighbours(args):
        # One neighbour at a time, every contender beside it in turn: the contenders meet
        # the same minute of the machine (a shared machine's load drifts over minutes).
        rounds: list[dict[str, Any]] = []
        with running(neighbour, _embedder(args.embedder)):
            for r in range(args.rounds):  # a rotating order: no side always runs first
                results: dict[str, Any] = {}
                for name in rotated(names, r):
                    kind, env = CONTENDERS[name]
                    command = [sys.executable, "-m", "bench.contention_beside", kind, path,
                               str(args.tokens)]  # fmt: skip
                    results[name] = run_child(command, kind, env)
                rounds.append(results)
        for name in names:
            cells[name][neighbour] = merge_cell([r[name] for r in rounds])
        each = (ratios({n: {neighbour: r[n]} for n in names}, [neighbour]) for r in rounds)
        round_ratios[neighbour] = [round(x, 3) for e in each if (x := e[neighbour])]
    columns = neighbours(args)
    return {"model": str(path), "tokens": args.tokens, "cpus": os.cpu_count(),
            "rounds": args.rounds, "neighbours": columns, "cells": cells,
            "round_ratios": round_ratios,
            "ratios": {c: statistics.median(round_ratios[c]) if round_ratios[c] else None
                       for c in columns}}  # fmt: skip


def merge_cell(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One contender's rounds beside one neighbour as one cell: the median tok/s, each
    round's tok/s and settled thread count, the median round's other figures; the first
    error where no round measured."""
    measured = sorted((r for r in results if "tok_s" in r), key=lambda r: r["tok_s"])
    if not measured:
        return next((r for r in results if "error" in r), {"error": "no figure"})
    cell = dict(measured[(len(measured) - 1) // 2])  # the lower median's own figures
    cell["tok_s"] = statistics.median(r["tok_s"] for r in measured)
    cell["rounds_tok_s"] = [round(r["tok_s"], 2) for r in results if "tok_s" in r]
    cell["rounds_threads"] = [r.get("threads") for r in results if "tok_s" in r]
    return cell


def ratios(cells: dict[str, dict[str, Any]], columns: list[str]) -> dict[str, float | None]:
    """Per neighbour: the engine's tok/s over the better of llama.cpp's two policies (None
    where a figure is missing)."""
    out: dict[str, float | None] = {}
    for column in columns:
        engine = cells.get("engine", {}).get(column, {}).get("tok_s")
        peers = [cells.get(n, {}).get(column, {}).get("tok_s") for n in LLAMA]
        best = max((p for p in peers if p), default=None)
        out[column] = engine / best if engine and best else None
    return out


def beside_table(report: dict[str, Any]) -> str:
    """The report as a text table: tok/s per cell (the engine's settled threads in brackets)."""
    columns: list[str] = report["neighbours"]
    rounds = report.get("rounds", 1)
    head = (f"{report['model']}: a {report['tokens']}-token reply's decode tok/s, each "
            "process started beside its neighbour"
            + (f" (median of {rounds} rounds; x: the median of the rounds' ratios)"
               if rounds > 1 else ""))  # fmt: skip
    lines = [head, f"{'contender':<22} | " + " | ".join(f"{TITLES[c]:>10}" for c in columns)]
    lines.append("-" * len(lines[1]))
    for name, row in report["cells"].items():
        lines.append(f"{name:<22} | " + " | ".join(_cell(row.get(c, {})) for c in columns))
    ratio_cells = [f"{r:9.2f}x" if r else f"{'-':>10}" for r in report["ratios"].values()]
    lines.append(f"{'engine / best llama':<22} | " + " | ".join(ratio_cells))
    if report.get("rounds", 1) > 1:  # the median of the rounds' ratios above; their range here
        spans = [
            f"{min(r):.2f}-{max(r):.2f}" if r else "-" for r in report["round_ratios"].values()
        ]
        lines.append(f"{'  range of the rounds':<22} | " + " | ".join(f"{s:>10}" for s in spans))
    errors = [f"{n} beside {c}: {cell['error']}" for n, row in report["cells"].items()
              for c, cell in row.items() if "error" in cell]  # fmt: skip
    return "\n".join(lines + errors)


def _cell(cell: dict[str, Any]) -> str:
    if "tok_s" not in cell:
        return f"{'error':>10}"
    threads = cell.get("threads")
    suffix = f" [{threads}]" if threads else ""
    return f"{cell['tok_s']:.1f}{suffix}".rjust(10)


def _embedder(name: str) -> str:
    if name != "bundled":
        return name
    from engine.models import resolve_model

    return str(resolve_model("bundled").path)


# ------------------------------------------------------------------------ the reply child


def reply(kind: str, path: str, tokens: int) -> dict[str, Any]:
    """Open ``path`` in this (fresh) process, prefill, time ``tokens`` decode steps."""
    from bench.contention import _engine_stepper, _llama_stepper

    began = time.perf_counter()
    stepper = _engine_stepper if kind == "engine" else _llama_stepper
    step, threads, _keep = stepper(path, tokens)
    opened = time.perf_counter() - began
    times = []
    for i in range(tokens):
        t = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t)
    return {
        "tok_s": tokens / sum(times),
        "median_tok_s": 1.0 / statistics.median(times),
        "first_ms": [round(1000 * t, 1) for t in times[:8]],
        "threads": threads(),
        "open_s": round(opened, 2),
    }


if __name__ == "__main__":
    import json

    kind_, path_, tokens_ = sys.argv[1:4]
    print(json.dumps(reply(kind_, path_, int(tokens_))))
