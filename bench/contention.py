"""`python -m bench contention`: decode speed while another program holds cores.

Owns one table: greedy decode tokens/s of one file, first on an idle machine, then with
``--hogs`` busy processes beside it (each a Python loop that never sleeps, as a build or a
busy browser tab), for four contenders, each in its own process so that its environment is
its own: the engine with its thread governor (`engine.kernels.governor`), the engine without
it (``HEARTH_THREAD_GOVERNOR=0``: every thread at every step), and llama.cpp with its default
OpenMP policy and with ``OMP_WAIT_POLICY=passive``. Each contender prefills the same prompt
and times ``--tokens`` forward steps of one token (logits only, no sampling: the same work on
both engines); the median step counts, and the first ``--warmup`` steps of each phase are
left out (the governor needs a few steps to see the slowdown, llama.cpp none). Figures only:
nothing asserts a timing. Needs llama-cpp-python (``make bench-peers``) for its rows.

``--beside`` measures as a user's reply meets the desktop instead: each contender's process
STARTS beside its neighbour (`bench.neighbours`: idle, one and two busy processes, a
memory-heavy process, Hearth's background embedding), opens the file, prefills and writes one
``--tokens``-step reply (128 by default), every step counted (tokens / their total time: a
slow start costs here, as it does the user). One row per contender, one column per
neighbour, and a last row with the engine's ratio to llama.cpp under its better OpenMP policy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.neighbours import KINDS

CONTENDERS = {  # name → (worker kind, extra environment)
    "engine": ("engine", {}),
    "engine, no governor": ("engine", {"HEARTH_THREAD_GOVERNOR": "0"}),
    "llama.cpp": ("llama", {}),
    "llama.cpp passive": ("llama", {"OMP_WAIT_POLICY": "passive"}),
}
# A loop that never sleeps, and ends with its parent (a killed worker leaves no hog behind).
_HOG = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    sum(range(10000))\n"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("contention", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument(
        "--model", default=None, help="'bundled' or a .gguf (default: --synthetic's file)"
    )
    p.add_argument("--synthetic", default="qwen3:Q4_K_M", help="ARCH:PLAN of bench.synthetic")
    p.add_argument("--hogs", type=int, default=1, help="busy processes beside it (default 1)")
    p.add_argument(
        "--tokens",
        type=int,
        default=None,
        help="timed decode steps per phase (48; --beside: the reply's tokens, 128)",
    )
    p.add_argument("--warmup", type=int, default=12, help="steps per phase left out")
    p.add_argument(
        "--beside",
        action="store_true",
        help="each contender's process starts beside each neighbour (bench.neighbours)",
    )
    p.add_argument(
        "--neighbours",
        default=",".join(KINDS),
        help=f"--beside: comma-separated, of {', '.join(KINDS)}",
    )
    p.add_argument(
        "--contenders",
        default=None,
        help=f"comma-separated, of {', '.join(CONTENDERS)} (--beside: all but "
        "the engine without governor)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="--beside: alternating rounds per neighbour, each reply a fresh process (medians)",
    )
    p.add_argument("--embedder", default="bundled", help="--beside: the embedding child's model")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from engine.errors import InvalidParamsError

    check_args(args)
    if args.tokens is None:
        args.tokens = 128 if args.beside else 48
    if args.hogs < 1 or args.tokens < 1 or args.rounds < 1 or args.warmup < 0:
        raise InvalidParamsError("--hogs, --tokens and --rounds must be >= 1, --warmup >= 0")
    if args.model == "bundled":  # as the other benches take it
        from engine.models import bundled_gguf_path

        args.model = str(bundled_gguf_path())
    path = args.model or _synthetic(args.synthetic)
    if args.beside:
        from bench.contention_beside import beside_report, beside_table

        report = beside_report(path, args)
        print(json.dumps(report) if args.json else beside_table(report))
        return 0
    rows = []
    for name in contenders(args):
        kind, env = CONTENDERS[name]
        row: dict[str, Any] = {"contender": name}
        row.update(_worker(kind, env, path, args))
        rows.append(row)
    report = {"model": str(path), "hogs": args.hogs, "cpus": os.cpu_count(), "rows": rows}
    print(json.dumps(report) if args.json else _table(report))
    return 0


def check_args(args: argparse.Namespace) -> None:
    """One clear line for a neighbour or contender name this bench does not know."""
    from engine.errors import InvalidParamsError

    unknown = [n for n in neighbours(args) if n not in KINDS]
    unknown += [n for n in contenders(args) if n not in CONTENDERS]
    if unknown:
        raise InvalidParamsError(f"unknown neighbour or contender: {', '.join(unknown)}")


def neighbours(args: argparse.Namespace) -> list[str]:
    return [n.strip() for n in args.neighbours.split(",") if n.strip()]


def contenders(args: argparse.Namespace) -> list[str]:
    """The contenders asked for; by default all, or all but the engine without its governor
    with --beside (that row halves the run's time and the issue's question is the ratio)."""
    if args.contenders is None:
        return [n for n in CONTENDERS if not (args.beside and n == "engine, no governor")]
    # A name may hold a comma ("engine, no governor"): a piece that joins the next into a
    # known name is that name, not two unknown ones.
    parts = [n.strip() for n in args.contenders.split(",")]
    names: list[str] = []
    i = 0
    while i < len(parts):
        joined = f"{parts[i]}, {parts[i + 1]}" if i + 1 < len(parts) else ""
        if joined in CONTENDERS:
            names.append(joined)
            i += 2
            continue
        if parts[i]:
            names.append(parts[i])
        i += 1
    return names


def rotated(names: list[str], round_: int) -> list[str]:
    """``names`` in round ``round_``'s order: each round starts one further on, so that no
    contender always runs first (the first process of a round meets a colder machine)."""
    k = round_ % len(names) if names else 0
    return names[k:] + names[:k]


def _synthetic(spec: str) -> str:
    from bench.synthetic import synthetic_model
    from engine.errors import InvalidParamsError

    arch, _, plan = spec.partition(":")
    if not plan:
        raise InvalidParamsError(f"--synthetic wants ARCH:PLAN, not {spec!r}")
    return str(synthetic_model(arch, plan))


def _worker(kind: str, env: dict[str, str], path: str, args: argparse.Namespace) -> dict[str, Any]:
    """One contender in its own process: its idle and contended figures, or an error."""
    command = [sys.executable, "-m", "bench.contention", kind, path, str(args.tokens),
               str(args.warmup), str(args.hogs)]  # fmt: skip
    return run_child(command, kind, env)


def run_child(command: list[str], kind: str, env: dict[str, str]) -> dict[str, Any]:
    """Run a worker ``command`` of ``kind`` ("engine" or "llama") with ``env`` added: the
    JSON object its last line prints, or ``{"error": its last stderr line}``."""
    base = dict(os.environ, HEARTH_OMP_PASSIVE="0")  # no policy of the engine's for llama.cpp
    if os.environ.get("HEARTH_OMP_PASSIVE") == "set":  # engine/__init__ set it here, not the user
        base.pop("OMP_WAIT_POLICY", None)
    if kind == "engine":  # the engine's processes set their own, as users run them
        base.pop("HEARTH_OMP_PASSIVE")
    proc = subprocess.run(command, env={**base, **env}, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _table(report: dict[str, Any]) -> str:
    head = f"{report['model']}: decode tok/s, idle and beside {report['hogs']} busy process(es)"
    lines = [head, f"{'contender':<22} | idle  | busy  | busy/idle | threads used (busy)"]
    lines.append("-" * len(lines[1]))
    for row in report["rows"]:
        if "error" in row:
            lines.append(f"{row['contender']:<22} | {row['error']}")
            continue
        ratio = row["busy"] / row["idle"] if row["idle"] else 0.0
        threads = row.get("threads_busy", "")
        lines.append(
            f"{row['contender']:<22} | {row['idle']:5.1f} | {row['busy']:5.1f} | "
            f"{ratio:9.2f} | {threads}"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------ the worker side


def _steps(step: Any, tokens: int, warmup: int, first: int) -> float:
    """Median tokens/s of ``tokens`` timed steps after ``warmup`` untimed ones."""
    times = []
    for i in range(warmup + tokens):
        began = time.perf_counter()
        step(first + i)
        if i >= warmup:
            times.append(time.perf_counter() - began)
    return 1.0 / statistics.median(times)


def _engine_stepper(path: str, steps: int) -> tuple[Any, Any, Any]:
    del steps  # the engine's window is the file's; llama.cpp's is sized to the run
    from bench.measure import prompt_ids
    from engine.runners.fast_open import fast_runner_or_reason

    runner, reason = fast_runner_or_reason(path)
    if runner is None:
        raise SystemExit(f"the fast path declined {path}: {reason}")
    runner.extend(prompt_ids(32), last_only=True)
    governor = runner._governor

    def threads() -> int | None:
        return None if governor is None else governor.current

    return (lambda token: runner.extend([token % 1000 + 10], last_only=True)), threads, runner


def _llama_stepper(path: str, steps: int) -> tuple[Any, Any, Any]:
    from llama_cpp import Llama

    from bench.measure import prompt_ids
    from engine.runners.session_options import physical_cores

    llm = Llama(path, n_ctx=64 + steps, n_threads=physical_cores(), n_batch=512, verbose=False)
    llm.eval(prompt_ids(32))
    return (lambda token: llm.eval([token % 1000 + 10])), (lambda: None), llm


def _worker_main(kind: str, path: str, tokens: int, warmup: int, hogs: int) -> None:
    stepper = _engine_stepper if kind == "engine" else _llama_stepper
    step, threads, _keep = stepper(path, 2 * (tokens + warmup))  # both phases' steps
    idle = _steps(step, tokens, warmup, 0)
    procs = [subprocess.Popen([sys.executable, "-c", _HOG]) for _ in range(hogs)]
    try:
        time.sleep(0.5)  # the hogs are running before the first busy step
        busy = _steps(step, tokens, warmup, tokens + warmup)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print(json.dumps({"idle": idle, "busy": busy, "threads_busy": threads()}))


if __name__ == "__main__":
    kind_, path_, tokens_, warmup_, hogs_ = sys.argv[1:6]
    _worker_main(kind_, path_, int(tokens_), int(warmup_), int(hogs_))
