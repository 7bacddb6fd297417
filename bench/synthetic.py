"""`python -m bench engine --synthetic SPEC | --requantized`: the fast path per arch and quant.

Owns the row set: which GGUF files (``--synthetic``: a random-weight file with the real shapes of a
popular checkpoint per architecture, `bench.synth.core.write_real_size_model`, written once under
``<cache root>/bench-models/``; ``--size tiny`` writes `write_tiny_model` files instead, for
tests; ``--requantized``: the bundled SmolLM2 and its llama.cpp requantizations,
`bench.requant`), one row per file with the engine's and llama.cpp's figures side by
side (each measured in its own child process, `bench.measure`), and the table / JSON.

SPEC: ``all`` (every architecture in Q4_K_M and Q8_0) or a comma list of ``ARCH[:PLAN]`` (``ARCH``
may be ``all``; no plan means both). Ratios are engine / llama.cpp: above 1 the engine decodes or
prefills faster; below 1 it needs less memory. A row that fails reports its error; the run goes
on. Figures only: nothing here asserts a timing. Does not own the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.measure import PROMPT_TOKENS, blocked_ids, run_child
from bench.requant import FTYPES, bench_models_dir, requantized_model
from engine.errors import InvalidParamsError

DEFAULT_PLANS = ("Q4_K_M", "Q8_0")
MAX_TOKENS = 2048 - PROMPT_TOKENS - 1  # llama.cpp runs with n_ctx 2048
ENGINE_KEYS: tuple[str, ...] = (
    "fast_path", "reason", "first_open_s", "second_open_s", "prefill_tokens_per_s",
    "decode_tokens_per_s", "peak_rss_mb", "baseline_rss_mb", "convert_peak_rss_mb", "dtype",
    "error",
)  # fmt: skip
LLAMA_KEYS: tuple[str, ...] = (
    "open_s", "prefill_tokens_per_s", "decode_tokens_per_s", "peak_rss_mb", "threads",
    "stopped_early", "error",
)  # fmt: skip
RATIOS = {"decode": "decode_tokens_per_s", "prefill": "prefill_tokens_per_s", "rss": "peak_rss_mb"}


@dataclass(frozen=True)
class Source:
    """One row's file: what it is, and how to get it (made on demand, errors belong to the row)."""

    arch: str
    plan: str
    make: Callable[[], Path]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--synthetic", metavar="SPEC", help="rows of random real-size GGUFs: 'all' or "
                   "a comma list of ARCH[:PLAN], e.g. qwen2:Q4_K_M,gemma3:Q8_0")  # fmt: skip
    p.add_argument("--requantized", action="store_true",
                   help="rows of the bundled model and its llama.cpp requantizations")  # fmt: skip
    p.add_argument("--tokens", type=int, default=64, help="greedy decode tokens per row")
    p.add_argument("--size", choices=("real", "tiny"), default="real", help=argparse.SUPPRESS)


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "synthetic", None) or getattr(args, "requantized", False))


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.tokens <= MAX_TOKENS:
        raise InvalidParamsError(f"--tokens must be in 1..{MAX_TOKENS}, got {args.tokens}")
    sources = synthetic_sources(parse_spec(args.synthetic), args.size) if args.synthetic else []
    sources += requantized_sources() if args.requantized else []
    rows = []
    for source in sources:
        rows.append(measure_row(source, args.tokens))
        print(f"  ... {source.arch} {source.plan} done", file=sys.stderr, flush=True)
    report = {"tokens": args.tokens, "prompt_tokens": PROMPT_TOKENS, "size": args.size}
    report["rows"] = rows
    print(json.dumps(report, indent=2) if args.json else format_report(rows))
    return 0


def parse_spec(spec: str) -> list[tuple[str, str]]:
    """``all`` / ``ARCH[:PLAN],...`` -> [(arch, plan)], in order, without repeats."""
    from bench.synth.configs import DENSE_ARCHS as DENSE
    from bench.synth.moe import MOE_ARCHS
    from bench.synth.plans import PLANS

    ARCHS = (*DENSE, *MOE_ARCHS, "qwen35", "gemma4", "qwen35moe", "gemma4moe")  # MoE: a 30B-A3B
    #   shape at half width, gpt-oss-20b's in 6 layers; qwen35: 0.8B; gemma4: E2B; qwen35moe:
    #   0.8B trunk, 64 experts of 512; gemma4moe: 26B-A4B's shapes in 6 of its 30 layers
    out: list[tuple[str, str]] = []
    for item in (part.strip() for part in spec.split(",")):
        arch, _, plan = item.partition(":")
        if arch != "all" and arch not in ARCHS:
            known = ", ".join(("all", *ARCHS))
            raise InvalidParamsError(f"unknown architecture {arch!r}; known: {known}")
        if plan and plan not in PLANS:
            raise InvalidParamsError(f"unknown plan {plan!r}; known: {', '.join(PLANS)}")
        for a in ARCHS if arch == "all" else (arch,):
            out += [(a, p) for p in ((plan,) if plan else DEFAULT_PLANS) if (a, p) not in out]
    return out


def synthetic_sources(pairs: list[tuple[str, str]], size: str) -> list[Source]:
    return [Source(a, p, partial(synthetic_model, a, p, size)) for a, p in pairs]


def requantized_sources() -> list[Source]:
    from engine.models import bundled_gguf_path

    rows = [Source("llama", "bundled Q4_1", bundled_gguf_path)]
    return rows + [Source("llama", f, partial(requantized_model, f)) for f in FTYPES]


def synthetic_model(arch: str, plan: str, size: str = "real") -> Path:
    """The random ``arch`` GGUF in ``plan`` under bench-models/ (written once)."""
    from bench.synth.core import write_real_size_model, write_tiny_model
    from bench.synth.moe import MOE_ARCHS

    target = bench_models_dir() / f"synth-{arch}-{plan}{'-tiny' if size == 'tiny' else ''}.gguf"
    if target.is_file():
        return target
    tmp = target.with_suffix(".tmp")
    if arch in MOE_ARCHS:
        _write_moe(tmp, arch, plan, size)
    elif arch == "qwen35":  # hybrid Gated DeltaNet (bench.synth.qwen35)
        _write_qwen35(tmp, plan, size)
    elif arch == "gemma4":  # Gemma 4 E2B's shapes (bench.synth.gemma4)
        _write_gemma4(tmp, plan, size)
    elif arch == "qwen35moe":  # hybrid + MoE (bench.synth.qwen35moe)
        _write_qwen35moe(tmp, plan, size)
    elif arch == "gemma4moe":  # Gemma 4 26B-A4B's shapes, 6 layers (bench.synth.gemma4_moe)
        _write_gemma4moe(tmp, plan, size)
    elif size == "tiny":
        write_tiny_model(tmp, arch, plan)
    else:
        print(f"  writing {target.name} (once)", file=sys.stderr, flush=True)
        write_real_size_model(tmp, arch, plan, progress=_progress(target.name))
    os.replace(tmp, target)
    return target


def _write_moe(path: Path, arch: str, plan: str, size: str) -> None:
    from bench.synth.moe import write_moe_model, write_real_size_moe_model

    if size == "tiny":
        write_moe_model(path, arch, plan, reference=False)
    else:
        print(f"  writing {path.stem}.gguf (once)", file=sys.stderr, flush=True)
        write_real_size_moe_model(path, arch, plan, progress=_progress(path.stem))


def _write_qwen35(path: Path, plan: str, size: str) -> None:
    from bench.synth.qwen35 import write_real_size_qwen35, write_tiny_qwen35

    if size == "tiny":
        write_tiny_qwen35(path, plan)
    else:
        print(f"  writing {path.stem}.gguf (once)", file=sys.stderr, flush=True)
        write_real_size_qwen35(path, plan)


def _write_qwen35moe(path: Path, plan: str, size: str) -> None:
    from bench.synth.qwen35moe import write_real_size_qwen35moe, write_tiny_qwen35moe

    if size == "tiny":
        write_tiny_qwen35moe(path, plan)
    else:
        print(f"  writing {path.stem}.gguf (once)", file=sys.stderr, flush=True)
        write_real_size_qwen35moe(path, plan)


def _write_gemma4(path: Path, plan: str, size: str) -> None:
    from bench.synth.gemma4 import write_real_size_gemma4, write_tiny_gemma4

    if size == "tiny":
        write_tiny_gemma4(path, plan)
    else:
        print(f"  writing {path.stem}.gguf (once)", file=sys.stderr, flush=True)
        write_real_size_gemma4(path, plan, progress=_progress(path.stem))


def _write_gemma4moe(path: Path, plan: str, size: str) -> None:
    from bench.synth.gemma4 import tiny_gemma4_config, write_real_size_gemma4, write_tiny_gemma4
    from bench.synth.gemma4_moe import BENCH_GEMMA4_MOE, TINY_GEMMA4_MOE

    if size == "tiny":
        write_tiny_gemma4(path, plan, tiny_gemma4_config(**TINY_GEMMA4_MOE))
    else:
        print(f"  writing {path.stem}.gguf (once)", file=sys.stderr, flush=True)
        write_real_size_gemma4(
            path, plan, progress=_progress(path.stem), shape=BENCH_GEMMA4_MOE,
            label="6-layer gemma-4-26B-A4B",
        )  # fmt: skip


def _progress(name: str) -> Callable[[int, int], None]:
    shown = [-1]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            print(f"    {name}: {done / 2**30:.2f} of {total / 2**30:.2f} GiB", file=sys.stderr)

    return report


def measure_row(source: Source, tokens: int) -> dict[str, Any]:
    """One file: the engine (conversion child, then run child) and llama.cpp, with ratios."""
    row: dict[str, Any] = {"arch": source.arch, "plan": source.plan, "file": None, "file_gb": None}
    row["load_avg"] = None
    try:
        path = source.make()
        blocked = _blocked_file(path)
    except Exception as exc:  # the file could not be made: this row only
        return {**row, "error": f"{type(exc).__name__}: {exc}", **_empty_sides()}
    row.update(file=str(path), file_gb=path.stat().st_size / 1e9)
    row["load_avg"] = os.getloadavg()[0]  # busy cores make every figure noisy (llama.cpp most)
    convert = run_child("engine-convert", path)
    engine = {**convert, "convert_peak_rss_mb": convert.pop("peak_rss_mb", None)}
    if convert.get("fast_path"):
        engine.update(run_child("engine", path, tokens, blocked))
    engine_tokens = engine.pop("tokens", None)
    llama = run_child("llama.cpp", path, tokens, blocked, follow=engine_tokens)
    llama_tokens = llama.pop("tokens", None)
    forced = llama.pop("forced_picks", None), llama.pop("forced_gaps", None)
    if llama.get("error"):  # a child that measured nothing: its RSS is no figure
        llama["peak_rss_mb"] = None
    _drop_graph(path)
    row["engine"] = {k: engine.get(k) for k in ENGINE_KEYS}
    row["llama_cpp"] = {k: llama.get(k) for k in LLAMA_KEYS}
    row["ratios"] = ratios(row["engine"], row["llama_cpp"])
    row["greedy_agree"] = _agreement(engine_tokens, llama_tokens)
    row.update(forced_agreement(engine_tokens, *forced, row["greedy_agree"]))
    return row


def _drop_graph(path: Path) -> None:
    """Delete the fast-path graph of a bench-only file (as large as the file; every run rebuilds
    it to time the first open). The bundled model's graph is the app's: it stays."""
    import shutil

    from engine.fastpath.cache import graph_folder

    if path.parent == bench_models_dir():
        shutil.rmtree(graph_folder(path), ignore_errors=True)


def _blocked_file(path: Path) -> Path:
    """The blocked-token mask of ``path`` as a .npy in bench-models/ (computed once per file;
    never beside the bundled file, which lives in site-packages)."""
    import numpy as np

    from engine.loader import gguf_cache_key

    target = bench_models_dir() / f"{path.stem}-{gguf_cache_key(path)[:12]}.blocked.npy"
    if not target.is_file():
        np.save(target, blocked_ids(path))
    return target


def _empty_sides() -> dict[str, Any]:
    return {
        "engine": dict.fromkeys(ENGINE_KEYS),
        "llama_cpp": dict.fromkeys(LLAMA_KEYS),
        "ratios": dict.fromkeys(RATIOS),
        "greedy_agree": None,
        **forced_agreement(None, None, None, None),
    }


def ratios(engine: dict[str, Any], llama: dict[str, Any]) -> dict[str, float | None]:
    """engine / llama.cpp per figure; None when either side has none."""
    out: dict[str, float | None] = {}
    failed = bool(engine.get("error") or llama.get("error"))
    for name, key in RATIOS.items():
        mine, theirs = engine.get(key), llama.get(key)
        out[name] = mine / theirs if mine is not None and theirs and not failed else None
    return out


def _agreement(mine: list[int] | None, theirs: list[int] | None) -> int | None:
    """How many leading greedy tokens the two sides share (None without both)."""
    if not mine or not theirs:
        return None
    same = 0
    for a, b in zip(mine, theirs, strict=False):
        if a != b:
            break
        same += 1
    return same


def forced_agreement(
    mine: list[int] | None,
    picks: list[int] | None,
    gaps: list[float] | None,
    split: int | None,
) -> dict[str, Any]:
    """How far apart the two sides' greedy picks are, beyond the shared lead (``split``, the
    ``greedy_agree`` count): ``forced_agree``, the positions at which llama.cpp, fed the
    engine's ids (``picks``, from `bench.measure.follow_stream`), picks the engine's id, and
    ``forced_positions``, how many were fed; ``split_gap``, llama.cpp's logit gap between its
    pick and the engine's where the free-running streams split (both had the same prefix there,
    so it is llama.cpp's own margin: near 0 means a near-tie, not a wrong graph)."""
    out: dict[str, Any] = dict.fromkeys(("forced_agree", "forced_positions", "split_gap"))
    if not mine or not picks or not gaps:
        return out
    fed = min(len(mine), len(picks), len(gaps))
    out["forced_agree"] = sum(1 for a, b in zip(mine[:fed], picks[:fed], strict=True) if a == b)
    out["forced_positions"] = fed
    if split is not None and split < fed:
        out["split_gap"] = gaps[split]
    return out


# ------------------------------------------------------------------ the table

HEADERS: tuple[str, ...] = (
    "arch", "plan", "GB", "decode eng", "llama", "x", "prefill eng", "llama", "x",
    "RSS MB eng", "llama", "x", "open s 1st/2nd", "fast path",
)  # fmt: skip
SIDE_BY_SIDE = (  # (figure, its ratio, format): engine, llama.cpp, ratio cells
    ("decode_tokens_per_s", "decode", "{:.1f}"),
    ("prefill_tokens_per_s", "prefill", "{:.0f}"),
    ("peak_rss_mb", "rss", "{:.0f}"),
)


def format_report(rows: list[dict[str, Any]]) -> str:
    """The table, then one line per error, fast-path decline or early stop."""
    lines = [_table([_cells(r) for r in rows])]
    lines.append("x = engine / llama.cpp (decode, prefill: tok/s, above 1 the engine is faster)")
    busy = [r["load_avg"] for r in rows if (r.get("load_avg") or 0) > _cores() - 0.5]
    if busy:
        lines.append(
            f"machine busy (1-min load up to {max(busy):.1f} on {_cores()} cores): figures are "
            "noisy, llama.cpp's most (its OpenMP threads spin)"
        )
    for r in rows:
        name = f"{r['arch']} {r['plan']}"
        engine, llama = r["engine"], r["llama_cpp"]
        if r.get("error"):
            lines.append(f"{name}: {r['error']}")
        if engine.get("fast_path") is False:
            lines.append(f"{name}: fast path declined: {engine.get('reason')}")
        if engine.get("error"):
            lines.append(f"{name}: engine: {engine['error']}")
        if llama.get("error"):
            lines.append(f"{name}: llama.cpp: {llama['error']}")
        if llama.get("stopped_early"):
            lines.append(f"{name}: llama.cpp stopped early: {llama['stopped_early']}")
        if r.get("split_gap") is not None:
            lines.append(_split_line(name, r))
    return "\n".join(lines)


def _split_line(name: str, r: dict[str, Any]) -> str:
    return (
        f"{name}: greedy streams split at token {r['greedy_agree']} (llama.cpp's logits of the "
        f"two picks {r['split_gap']:.2g} apart); fed the engine's tokens, llama.cpp picks the "
        f"same at {r['forced_agree']} of {r['forced_positions']}"
    )


def _cores() -> int:
    return os.cpu_count() or 1


def _cells(r: dict[str, Any]) -> list[str]:
    e, ll, x = r["engine"], r["llama_cpp"], r["ratios"]
    opens = f"{_fmt(e.get('first_open_s'), '{:.1f}')}/{_fmt(e.get('second_open_s'), '{:.2f}')}"
    fast = {True: "yes", False: "NO"}.get(e.get("fast_path"), "-")
    cells = [r["arch"], r["plan"], _fmt(r.get("file_gb"), "{:.2f}")]
    for key, ratio, fmt in SIDE_BY_SIDE:
        cells += [_fmt(e.get(key), fmt), _fmt(ll.get(key), fmt), _fmt(x.get(ratio), "{:.2f}")]
    return [*cells, opens, fast]


def _fmt(value: Any, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _table(lines: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(HEADERS, *lines, strict=False)]
    out = [" | ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)
