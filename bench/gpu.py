"""`python -m bench gpu`: decode and prefill on a CUDA GPU, the engine next to llama.cpp.

Owns one prepared run for a machine that is lent a GPU: it checks the device
(``nvidia-smi``), installs what the run needs into the current Python unless told not to
(`install_plan`: ONNX Runtime's CUDA build at the CPU build's version, llama-cpp-python
compiled with ``GGML_CUDA=on``), then, for each model (the bundled SmolLM2 and a 0.5-1.5B
GGUF), measures in child processes: the engine's fast-path graph on ONNX Runtime's CUDA
execution provider (MatMulNBits, GroupQueryAttention; the CPU path's own graph, opened with
the CUDA provider first: the providers the session really uses are reported, so a graph
that fell back to the CPU says so) and llama.cpp with every layer offloaded. Figures: prefill
tokens/s at each ``--prompts`` length and decode tokens/s over ``--tokens`` greedy steps;
ratios engine / llama.cpp. ``--dry-run`` prints the plan without a GPU. Figures only:
nothing asserts a timing. The torch CUDA path (Hugging Face folders) is `bench/gpu.sh`'s.

``python -m bench.gpu KIND FILE PROMPTS TOKENS`` is the child (KIND: engine or llama).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from typing import Any

from engine.errors import InvalidParamsError

CONTENDERS = ("engine", "llama")
TITLES = {"engine": "engine (ORT CUDA EP)", "llama": "llama.cpp (CUDA)"}
DEFAULT_MODELS = "bundled,synthetic:qwen2:Q4_K_M"  # the 0.5B-shaped qwen2 of bench.synthetic


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("gpu", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--models", default=DEFAULT_MODELS,
                   help="comma-separated: bundled, a .gguf path, synthetic:ARCH:PLAN")  # fmt: skip
    p.add_argument("--prompts", default="512,2000", help="prefill lengths, comma-separated")
    p.add_argument("--tokens", type=int, default=128, help="decode steps (greedy)")
    p.add_argument("--no-install", action="store_true", help="use what is installed")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def prompt_lengths(
    text: str, flag: str = "--prompts", most: int = 8192, example: str = "512,2000"
) -> list[int]:
    """``flag``'s comma-separated token counts (1..``most``); InvalidParamsError (one line)
    for anything else."""
    try:
        lengths = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise InvalidParamsError(f"{flag} wants numbers like {example}, not {text!r}") from None
    if not lengths or any(n < 1 or n > most for n in lengths):
        raise InvalidParamsError(f"{flag} must be 1..{most} tokens each, got {text!r}")
    return lengths


def install_plan(python: str = sys.executable) -> list[list[str]]:
    """The pip commands the run needs: ONNX Runtime's CUDA build at the installed CPU build's
    version (one ``onnxruntime`` module: the CPU build goes first), llama.cpp for CUDA."""
    try:
        version = metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        version = "1.32.0"
    pip = [python, "-m", "pip", "install", "-q"]
    return [
        [python, "-m", "pip", "uninstall", "-y", "onnxruntime"],
        [*pip, f"onnxruntime-gpu=={version}"],
        [*pip, "--no-cache-dir", "--force-reinstall", "--no-deps", "llama-cpp-python==0.3.36"],
    ]


def run(args: argparse.Namespace) -> int:
    lengths = prompt_lengths(args.prompts)
    if args.tokens < 1:
        raise InvalidParamsError(f"--tokens must be >= 1, got {args.tokens}")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    plan = [] if args.no_install else install_plan()
    if args.dry_run:
        steps = [" ".join(c) for c in plan] + [
            f"measure {TITLES[k]} on {m}: prefill {lengths}, decode {args.tokens}"
            for m in models for k in CONTENDERS]  # fmt: skip
        print(json.dumps({"plan": steps}) if args.json else "\n".join(steps))
        return 0
    device = gpu_name()
    if device is None:
        raise InvalidParamsError("no CUDA GPU here (nvidia-smi finds none): nothing to measure")
    for command in plan:  # llama.cpp's build reads CMAKE_ARGS
        env = {"CMAKE_ARGS": "-DGGML_CUDA=on", "FORCE_CMAKE": "1"}
        subprocess.run(command, check=True, env={**os.environ, **env})
    rows = []
    for model in models:
        path = resolve(model)
        for kind in CONTENDERS:
            rows.append({"model": model, "contender": kind, **child(kind, path, lengths, args)})
    report = {"device": device, "prompts": lengths, "tokens": args.tokens, "rows": rows}
    print(json.dumps(report) if args.json else table(report))
    return 0


def gpu_name() -> str | None:
    """The first GPU's name, or None where there is none (or no driver)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    done = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    name = done.stdout.strip().splitlines()[:1]
    return name[0] if done.returncode == 0 and name else None


def resolve(model: str) -> str:
    """A --models entry as a file: bundled, synthetic:ARCH:PLAN, or a path."""
    if model == "bundled":
        from engine.models import resolve_model

        return str(resolve_model("bundled").path)
    if model.startswith("synthetic:"):
        from bench.synthetic import synthetic_model

        arch, _, plan = model.removeprefix("synthetic:").partition(":")
        return str(synthetic_model(arch, plan or "Q4_K_M"))
    return model


def child(kind: str, path: str, lengths: list[int], args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.gpu", kind, path,
               ",".join(map(str, lengths)), str(args.tokens)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def table(report: dict[str, Any]) -> str:
    """The report as text: one line per model and contender, then the ratios per model."""
    lengths: list[int] = report["prompts"]
    head = [f"{'model':<28}", f"{'contender':<22}"]
    head += [f"prefill {n}".rjust(12) for n in lengths] + [f"decode {report['tokens']}".rjust(11)]
    lines = [f"{report['device']}: tokens/s", " | ".join(head)]
    lines.append("-" * len(lines[1]))
    by_model: dict[str, dict[str, dict[str, Any]]] = {}
    for row in report["rows"]:
        by_model.setdefault(row["model"], {})[row["contender"]] = row
        cells = [f"{row['model'][-28:]:<28}", f"{TITLES[row['contender']]:<22}"]
        if "error" in row:
            lines.append(" | ".join([*cells, row["error"]]))
            continue
        cells += [f"{row['prefill'].get(str(n), 0.0):12.1f}" for n in lengths]
        lines.append(" | ".join([*cells, f"{row['decode']:11.1f}"]))
    for model, pair in by_model.items():
        engine, llama = pair.get("engine", {}), pair.get("llama", {})
        if "decode" not in engine or "decode" not in llama:
            continue
        parts = [f"prefill {n}: {ratio(engine['prefill'], llama['prefill'], str(n))}"
                 for n in lengths]  # fmt: skip
        decode = f"{engine['decode'] / llama['decode']:.2f}x" if llama["decode"] else "-"
        lines.append(f"engine / llama.cpp on {model}: " + ", ".join([*parts, f"decode {decode}"]))
    return "\n".join(lines)


def ratio(mine: dict[str, float], theirs: dict[str, float], key: str) -> str:
    if not theirs.get(key) or key not in mine:
        return "-"
    return f"{mine[key] / theirs[key]:.2f}x"


# ------------------------------------------------------------------------ the children


def _engine_child(path: str, lengths: list[int], tokens: int) -> dict[str, Any]:
    """The fast path's graph on the CUDA provider (the runner's own bindings and KV cache)."""
    import onnxruntime as ort

    from bench.measure import prompt_ids
    from engine.runners.fast_open import fast_runner_or_reason

    # GroupQueryAttention, which the CUDA provider runs, not the CPU kernel's HearthAttention
    os.environ["HEARTH_ATTENTION_OP"] = "0"
    runner, reason = fast_runner_or_reason(path, window=max(lengths) + tokens + 8)
    if runner is None:
        raise SystemExit(f"the fast path declined {path}: {reason}")
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    runner._session = ort.InferenceSession(str(runner.model_file), providers=providers)
    runner._bind_cache()  # the runner's bindings, on the CUDA session
    used = runner._session.get_providers()
    prefill = {}
    for n in lengths:
        runner.reset()
        began = time.perf_counter()
        runner.extend(prompt_ids(n), last_only=True)
        prefill[str(n)] = n / (time.perf_counter() - began)
    began = time.perf_counter()
    for i in range(tokens):
        runner.extend([i % 1000 + 10], last_only=True)
    return {"prefill": prefill, "decode": tokens / (time.perf_counter() - began),
            "providers": used}  # fmt: skip


def _llama_child(path: str, lengths: list[int], tokens: int) -> dict[str, Any]:
    from llama_cpp import Llama

    from bench.measure import prompt_ids

    llm = Llama(path, n_ctx=max(lengths) + tokens + 8, n_gpu_layers=-1, n_batch=512,
                verbose=False)  # fmt: skip
    prefill = {}
    for n in lengths:
        llm.reset()
        began = time.perf_counter()
        llm.eval(prompt_ids(n))
        prefill[str(n)] = n / (time.perf_counter() - began)
    began = time.perf_counter()
    for i in range(tokens):
        llm.eval([i % 1000 + 10])
    return {"prefill": prefill, "decode": tokens / (time.perf_counter() - began)}


if __name__ == "__main__":
    kind_, path_, lengths_, tokens_ = sys.argv[1:5]
    measure = _engine_child if kind_ == "engine" else _llama_child
    print(json.dumps(measure(path_, prompt_lengths(lengths_), int(tokens_))))
