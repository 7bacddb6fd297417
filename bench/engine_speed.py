"""`python -m bench engine`: how fast is this engine here, next to transformers and llama.cpp?

Owns the benchmark command: one prompt and one 8-turn conversation, run through each
*contender* (row) in the same process, printed as a table (or JSON with ``--json``). Figures
per row: load time, prefill and decode tokens/s, time to first token of turn 1 and of turn 8
(prefix reuse makes turn 8 cheap), cached prompt tokens at turn 8, completion tokens, peak RSS
of the process after that row ran, and decode speed relative to llama.cpp
(``decode_vs_llama_cpp``, null without a llama.cpp figure).

Rows (``--rows``): the engine on torch and on the CPU fast path, transformers ``generate()``,
llama.cpp via `bench.peers` (a "not installed (make bench-peers)" row when
llama-cpp-python is missing), and ``speculative``: greedy decoding of a rewrite prompt with and
without prompt-lookup speculation on the engine's default path, its speed-up and whether the
output is identical. A row that fails reports its error instead of ending the run.
``--synthetic SPEC`` / ``--requantized`` bench files instead: `bench.synthetic`.

Adding a row: append a `Contender` to `CONTENDERS` (or build one in `contenders_for`); its
``run(setup)`` returns a dict with any of the `COLUMNS` keys. Benchmarks print figures; they
never assert timings.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.types import Finished, GenerationRequest, Message, SamplingParams

PROMPT = (
    "Write a detailed story about a lighthouse keeper who finds a message in a bottle. "
    "Describe the sea, the weather and the keeper's daily routine."
)
FOLLOW_UPS = (
    "What was written in the message?",
    "Who sent it?",
    "How did the keeper feel?",
    "What did the keeper do next?",
    "Describe the lighthouse.",
    "What happened the following winter?",
    "Give the story a title.",
)
COLUMNS = {  # key -> (header, format)
    "load_s": ("load s", "{:.1f}"),
    "prompt_tokens": ("prompt", "{:d}"),
    "prefill_tokens_per_s": ("prefill tok/s", "{:.1f}"),
    "ttft_turn1_s": ("TTFT t1 s", "{:.3f}"),
    "ttft_turn8_s": ("TTFT t8 s", "{:.3f}"),
    "turn8_prompt_tokens": ("prompt t8", "{:d}"),
    "cached_turn8": ("cached t8", "{:d}"),
    "decode_tokens_per_s": ("decode tok/s", "{:.1f}"),
    "completion_tokens": ("tokens", "{:d}"),
    "decode_vs_llama_cpp": ("vs llama.cpp", "{:.2f}x"),
    "peak_rss_mb": ("peak RSS MB", "{:.0f}"),
}
REWRITE_PROMPT = (  # copy-heavy: where prompt-lookup speculation pays off
    "Rewrite the following paragraph in clear, formal English. Keep every fact and name.\n\n"
    "The lighthouse keeper, Mara Quill, climbs the ninety-two steps of the Kestrel Point light "
    "every evening at six. She trims the wick, polishes the lens and writes the weather in her "
    "logbook: wind from the west, a heavy swell, rain after midnight. On the first of March she "
    "found a green bottle on the shingle below the tower. Inside was a letter from a girl in "
    "Bergen who asked whoever found it to write back and describe the sea where they live."
)
NOT_INSTALLED = "not installed (make bench-peers)"


@dataclass
class BenchSetup:
    """What every contender runs: the model, the sampling, and shared loaded objects."""

    model: str
    dtype: str
    max_tokens: int
    params: SamplingParams
    shared: dict[str, Any] = field(default_factory=dict)  # e.g. the torch Engine, for reuse


@dataclass(frozen=True)
class Contender:
    name: str
    run: Callable[[BenchSetup], dict[str, Any]]


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("engine", help="Benchmark decode/prefill speed", description=__doc__)
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf")
    p.add_argument("--dtype", choices=("auto", "float32", "float16", "bfloat16"), default="auto")
    p.add_argument("--max-tokens", type=int, default=256, help="tokens to generate in turn 1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--rows",
        "--contenders",
        dest="rows",
        default=",".join(c.name for c in CONTENDERS),
        help="comma-separated rows to run (default: all): " + ", ".join(c.name for c in CONTENDERS),
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    from bench import synthetic as bench_synthetic

    bench_synthetic.add_arguments(p)  # --synthetic / --requantized: rows per file, not per backend


def run(args: argparse.Namespace) -> int:
    from bench import synthetic as bench_synthetic
    from engine.errors import InvalidParamsError

    if bench_synthetic.wanted(args):
        return bench_synthetic.run(args)
    if args.max_tokens < 2:
        raise InvalidParamsError(f"--max-tokens must be >= 2, got {args.max_tokens}")
    chosen = [c.strip() for c in args.rows.split(",") if c.strip()]
    known = {c.name: c for c in CONTENDERS}
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise InvalidParamsError(
            f"unknown row(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    params = SamplingParams(temperature=0.7, seed=args.seed, max_new_tokens=args.max_tokens)
    setup = BenchSetup(args.model, args.dtype, args.max_tokens, params)
    rows = []
    for name in chosen:
        row = _run_row(known[name], setup)
        # A row measured in a child process brings its own peak; in-process rows are cumulative.
        rows.append({"name": name, **row, "peak_rss_mb": row.get("peak_rss_mb") or peak_rss_mb()})
        if not args.json:
            print(f"  ... {name} done", file=sys.stderr, flush=True)
    add_llama_cpp_ratios(rows)
    report = {"model": args.model, "max_tokens": args.max_tokens, "rows": rows}
    print(json.dumps(report, indent=2) if args.json else format_report(rows))
    return 0


def _run_row(contender: Contender, setup: BenchSetup) -> dict[str, Any]:
    """One row's figures, or {"error": ...} when that contender cannot run here."""
    from engine.errors import EngineError

    try:
        return contender.run(setup)
    except EngineError as exc:  # e.g. the fast path declines this model: keep the other rows
        return {"error": f"{type(exc).__name__}: {exc}"}


def add_llama_cpp_ratios(rows: list[dict[str, Any]]) -> None:
    """Set each row's ``decode_vs_llama_cpp``: its decode tok/s / llama.cpp's (None if missing)."""
    base = next((r for r in rows if r["name"] == "llama.cpp" and "error" not in r), None)
    base_decode = base.get("decode_tokens_per_s") if base else None
    for row in rows:
        decode = row.get("decode_tokens_per_s")
        ratio = decode / base_decode if base_decode and decode is not None else None
        row["decode_vs_llama_cpp"] = ratio


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def format_report(rows: list[dict[str, Any]]) -> str:
    """The table, then one line per row that failed and one for the speculative result."""
    notes = [f"{r['name']}: {r['error']}" for r in rows if "error" in r]
    for r in rows:
        if r["name"] == "speculative" and "error" not in r:
            notes.append(
                f"speculative ({r['prompt']} prompt, greedy, {r['backend']}): "
                f"{_cell(r['speedup'], '{:.2f}x')} vs plain greedy "
                f"({_cell(r['decode_tokens_per_s'], '{:.1f}')} vs "
                f"{_cell(r['plain_decode_tokens_per_s'], '{:.1f}')} tok/s), "
                f"identical output: {'yes' if r['identical_output'] else 'NO'}"
                + _from_token(r.get("first_difference"))
            )
    return "\n".join([format_table(rows), *notes])


def format_table(rows: list[dict[str, Any]]) -> str:
    headers = ["contender"] + [h for h, _ in COLUMNS.values()]
    lines = [
        [str(r["name"])] + [_cell(r.get(k), fmt) for k, (_, fmt) in COLUMNS.items()] for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(headers, *lines, strict=False)]
    out = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


# --- contenders ---------------------------------------------------------------------------


def engine_contender(backend: str) -> Contender:
    """This engine's loop over a TorchRunner ("torch") or the CPU fast path Runner ("onnx")."""

    def run_engine(setup: BenchSetup) -> dict[str, Any]:
        from engine.engine import Engine

        start = time.perf_counter()
        engine = Engine(setup.model, dtype=setup.dtype, backend=backend)
        load_s = time.perf_counter() - start
        if backend == "torch":  # the transformers row reuses these weights
            setup.shared["engine"] = engine
        else:  # the speculative row reuses the fast path
            setup.shared["engine-fast"] = engine
        messages = [Message("user", PROMPT)]
        first = _finish(engine, GenerationRequest(tuple(messages), setup.params, "bench"))
        messages.append(Message("assistant", first.text))
        last = first
        for question in FOLLOW_UPS:  # turns 2..8: short replies, growing shared prefix
            messages.append(Message("user", question))
            short = setup.params.replace(max_new_tokens=16)
            last = _finish(engine, GenerationRequest(tuple(messages), short, "bench"))
            messages.append(Message("assistant", last.text))
        s = first.stats
        return {
            "backend": engine.info.backend,
            "dtype": engine.info.dtype,
            "load_s": load_s,
            "prompt_tokens": s.prompt_tokens,
            "prefill_tokens_per_s": s.prefill_tokens_per_s,
            "ttft_turn1_s": s.ttft_s,
            "ttft_turn8_s": last.stats.ttft_s,
            "cached_turn8": last.stats.cached_prompt_tokens,
            "turn8_prompt_tokens": last.stats.prompt_tokens,
            "decode_tokens_per_s": s.decode_tokens_per_s,
            "completion_tokens": s.completion_tokens,
        }

    return Contender("engine" if backend == "torch" else f"engine-{backend}", run_engine)


def _finish(engine: Any, request: GenerationRequest) -> Finished:
    done = None
    for event in engine.generate(request):
        done = event
    assert isinstance(done, Finished)
    return done


def transformers_contender(setup: BenchSetup) -> dict[str, Any]:
    """The same weights and templated prompt through transformers ``generate()`` (sampling on)."""
    import torch
    from transformers.generation.streamers import BaseStreamer

    from engine.text import fit_context

    engine = setup.shared.get("engine")
    if engine is None:
        from engine.engine import Engine

        engine = setup.shared["engine"] = Engine(setup.model, dtype=setup.dtype, backend="torch")
    model, p = engine.loaded.model, setup.params
    prompt = fit_context(
        engine.tokenizer, (Message("user", PROMPT),), context_window=engine.info.context_window,
        reserve_tokens=setup.max_tokens,
    ).ids  # fmt: skip

    class Clock(BaseStreamer):
        def __init__(self) -> None:
            self.times: list[float] = []

        def put(self, value: Any) -> None:
            self.times.append(time.perf_counter())

        def end(self) -> None:
            pass

    clock = Clock()
    input_ids = torch.tensor([list(prompt)], device=model.device)
    torch.manual_seed(p.seed or 0)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids), do_sample=True,
            temperature=p.temperature, top_k=p.top_k, top_p=p.top_p, min_p=p.min_p,
            repetition_penalty=p.repetition_penalty, max_new_tokens=setup.max_tokens,
            eos_token_id=sorted(engine.eos_ids), pad_token_id=2, streamer=clock,
        )  # fmt: skip
    end = time.perf_counter()
    n = out.shape[1] - len(prompt)
    first = clock.times[1] if len(clock.times) > 1 else end  # put #0 is the prompt itself
    return {
        "backend": "transformers",
        "prompt_tokens": len(prompt),
        "prefill_tokens_per_s": len(prompt) / (first - start),
        "ttft_turn1_s": first - start,
        "decode_tokens_per_s": (n - 1) / (end - first) if n > 1 else 0.0,
        "completion_tokens": n,
    }


def llama_cpp_contender(setup: BenchSetup) -> dict[str, Any]:
    """llama.cpp (llama-cpp-python) on the same .gguf, same prompt and conversation."""
    from bench.peers import llama_cpp_available, measure_llama_cpp
    from engine.models import resolve_model

    if not llama_cpp_available():
        return {"error": NOT_INSTALLED}
    spec = resolve_model(setup.model)
    if spec.kind != "gguf":
        return {"error": f"llama.cpp needs a .gguf model, {setup.model} is a {spec.kind} model"}
    result = _in_child_with_default_openmp(
        measure_llama_cpp,
        str(spec.path),
        prompt=PROMPT,
        turns=[PROMPT, *FOLLOW_UPS],
        max_tokens=setup.max_tokens,
    )
    if result is None:  # measure_llama_cpp re-checks the import
        return {"error": NOT_INSTALLED}
    if "error" in result:
        return result
    result["ttft_turn1_s"] = result.pop("ttft_s", result.get("ttft_turn1_s"))
    return result


def _in_child_with_default_openmp(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` in a child Python whose OpenMP wait policy is the default.

    llama.cpp uses OpenMP too; the PASSIVE policy `engine/__init__` sets for this process (good
    for torch under contention) cuts llama.cpp's decode ~3x, which would flatter us. The child
    gets llama.cpp's own defaults, so the peer is measured as users run it.
    """
    env = dict(os.environ, HEARTH_OMP_PASSIVE="0")
    if os.environ.get("HEARTH_OMP_PASSIVE") == "set":  # the policy was ours, not the user's
        env.pop("OMP_WAIT_POLICY", None)
    call = {"module": fn.__module__, "name": fn.__qualname__, "args": args, "kwargs": kwargs}
    # The child reports its own peak RSS: the row's figure is llama.cpp's, not ours.
    code = (
        "import importlib, json, sys; c = json.loads(sys.argv[1]); "
        "from bench.peers import peak_rss_mb; "
        "f = getattr(importlib.import_module(c['module']), c['name']); "
        "r = f(*c['args'], **c['kwargs']); "
        "r is None or r.update(peak_rss_mb=peak_rss_mb()); "
        "print(json.dumps(r))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(call)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def speculative_contender(setup: BenchSetup) -> dict[str, Any]:
    """Greedy on a rewrite prompt, plain then speculative, on the engine's default path."""
    from engine.engine import Engine

    engine = setup.shared.get("engine-fast")
    if engine is None:  # "auto": the fast path where it applies, else torch
        engine = setup.shared["engine-fast"] = Engine(setup.model, dtype=setup.dtype)
    greedy = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=setup.max_tokens)
    messages = (Message("user", REWRITE_PROMPT),)
    runs = {}
    for speculative in (False, True):
        engine.speculative = speculative
        engine.runner.reset()  # both runs prefill the whole prompt
        forwards: list[int] = []
        engine.runner.extend_calls = forwards  # opt in to counting forwards
        request = GenerationRequest(messages, greedy, f"bench-speculative-{speculative}")
        runs[speculative] = (_finish(engine, request), len(forwards))
    engine.speculative = False
    engine.runner.extend_calls = None
    (plain, _), (spec, spec_forwards) = runs[False], runs[True]
    plain_decode = plain.stats.decode_tokens_per_s
    return {
        "backend": engine.info.backend,
        "dtype": engine.info.dtype,
        "prompt": "rewrite",
        "prompt_tokens": spec.stats.prompt_tokens,
        "prefill_tokens_per_s": spec.stats.prefill_tokens_per_s,
        "ttft_turn1_s": spec.stats.ttft_s,
        "decode_tokens_per_s": spec.stats.decode_tokens_per_s,
        "completion_tokens": spec.stats.completion_tokens,
        "plain_decode_tokens_per_s": plain_decode,
        "speedup": spec.stats.decode_tokens_per_s / plain_decode if plain_decode else None,
        "identical_output": spec.token_ids == plain.token_ids,
        # on the int8 fast path a verified draft's multi-token run rounds apart from a 1-token
        # step (engine.speculative): where a near tie flips, the two replies part from here
        "first_difference": first_difference(plain.token_ids, spec.token_ids),
        "forwards": spec_forwards or None,  # extend() calls incl. prefill, if counted
    }


def _from_token(index: int | None) -> str:
    return "" if index is None else f" (from token {index})"


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where ``a`` and ``b`` differ (one ending early counts); None if equal."""
    if list(a) == list(b):
        return None
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


CONTENDERS: list[Contender] = [
    engine_contender("torch"),
    Contender("transformers", transformers_contender),
    engine_contender("onnx"),
    Contender("llama.cpp", llama_cpp_contender),
    Contender("speculative", speculative_contender),
]
