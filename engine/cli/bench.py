"""`python -m engine bench`: how fast is this engine here, next to plain transformers?

Owns the benchmark command: one prompt and one 8-turn conversation, run through each
*contender* in the same process, printed as a table (or JSON with ``--json``). Figures per
contender: load time, prefill and decode tokens/s, time to first token of turn 1 and of turn
8 (prefix reuse makes turn 8 cheap), cached prompt tokens at turn 8, completion tokens, and
peak RSS of the process after that contender ran.

Adding a row: append a `Contender` to `CONTENDERS` (or build one in `contenders_for`); its
``run(setup)`` returns a dict with any of the `COLUMNS` keys. Benchmarks print figures; they
never assert timings.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
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
    "peak_rss_mb": ("peak RSS MB", "{:.0f}"),
}


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
    p = subparsers.add_parser("bench", help="Benchmark decode/prefill speed", description=__doc__)
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf")
    p.add_argument("--dtype", choices=("auto", "float32", "float16", "bfloat16"), default="auto")
    p.add_argument("--max-tokens", type=int, default=256, help="tokens to generate in turn 1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--contenders",
        default="engine,engine-onnx,transformers",
        help="comma-separated rows to run: " + ", ".join(c.name for c in CONTENDERS),
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    from engine.errors import InvalidParamsError

    if args.max_tokens < 2:
        raise InvalidParamsError(f"--max-tokens must be >= 2, got {args.max_tokens}")
    chosen = [c.strip() for c in args.contenders.split(",") if c.strip()]
    known = {c.name: c for c in CONTENDERS}
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise InvalidParamsError(
            f"unknown contender(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    params = SamplingParams(temperature=0.7, seed=args.seed, max_new_tokens=args.max_tokens)
    setup = BenchSetup(args.model, args.dtype, args.max_tokens, params)
    rows = []
    for name in chosen:
        result = {"name": name, **known[name].run(setup)}
        result["peak_rss_mb"] = peak_rss_mb()
        rows.append(result)
        if not args.json:
            print(f"  ... {name} done", file=sys.stderr, flush=True)
    report = {"model": args.model, "max_tokens": args.max_tokens, "rows": rows}
    print(json.dumps(report, indent=2) if args.json else format_table(rows))
    return 0


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


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


CONTENDERS: list[Contender] = [
    engine_contender("torch"),
    Contender("transformers", transformers_contender),
    engine_contender("onnx"),
]
