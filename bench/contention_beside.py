"""`python -m bench contention --beside`: a reply's decode speed, the process started beside
each neighbour.

Owns the grid of that mode: for each contender (`bench.contention.CONTENDERS`) and each
neighbour (`bench.neighbours`), the neighbour is started, then a fresh process of the
contender opens the file, prefills 32 tokens and writes one ``--tokens``-step reply; its
figure is tokens over the steps' total time (every step counts: a governor that starts
wrong pays here, as a user's reply does), with the median step and the first eight steps'
milliseconds beside it. The table adds the engine's ratio to llama.cpp's better policy per
column. ``python -m bench.contention_beside KIND FILE TOKENS`` is the reply child. Figures
only: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from bench.contention import CONTENDERS, contenders, neighbours, run_child
from bench.neighbours import TITLES, running

LLAMA = ("llama.cpp", "llama.cpp passive")


def beside_report(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every contender's reply beside every neighbour asked for: {contender: {neighbour: …}}."""
    cells: dict[str, dict[str, Any]] = {name: {} for name in contenders(args)}
    for neighbour in neighbours(args):
        # One neighbour at a time, every contender beside it in turn: the contenders meet
        # the same minute of the machine (a shared machine's load drifts over minutes).
        with running(neighbour, _embedder(args.embedder)):
            for name in cells:
                kind, env = CONTENDERS[name]
                command = [sys.executable, "-m", "bench.contention_beside", kind, path,
                           str(args.tokens)]  # fmt: skip
                cells[name][neighbour] = run_child(command, kind, env)
    return {"model": str(path), "tokens": args.tokens, "cpus": os.cpu_count(),
            "neighbours": neighbours(args), "cells": cells,
            "ratios": ratios(cells, neighbours(args))}  # fmt: skip


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
    head = (f"{report['model']}: a {report['tokens']}-token reply's decode tok/s, each "
            "process started beside its neighbour")  # fmt: skip
    lines = [head, f"{'contender':<22} | " + " | ".join(f"{TITLES[c]:>10}" for c in columns)]
    lines.append("-" * len(lines[1]))
    for name, row in report["cells"].items():
        lines.append(f"{name:<22} | " + " | ".join(_cell(row.get(c, {})) for c in columns))
    ratio_cells = [f"{r:9.2f}x" if r else f"{'-':>10}" for r in report["ratios"].values()]
    lines.append(f"{'engine / best llama':<22} | " + " | ".join(ratio_cells))
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
