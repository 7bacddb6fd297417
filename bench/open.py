"""`python -m bench open`: how long a model takes to open and how much memory it holds, next to
llama.cpp on the same file.

Owns one row per model: the engine's first open (a fresh process with an empty
``HEARTH_CACHE_DIR``: header, tokenizer and fast-path conversion all redone; the OS page cache
dropped first when this process may, which the row says), its later open (another fresh process,
caches warm), peak RSS while generating N tokens and decode tok/s in that later process, with
the RSS after imports (before any model) and after the open, so the peak can be split; then
llama.cpp's load time, peak RSS and decode tok/s on the same file (`bench.measure`'s child),
run with its default OpenMP wait policy and with ``OMP_WAIT_POLICY=passive``, the better
figure of each kept. Each side runs in its own child process (imports counted, peaks apart).
Figures only: nothing asserts a timing. MODEL: ``bundled``, a .gguf path, or
``synthetic:ARCH:PLAN`` (a random real-size file, `bench.synthetic.synthetic_model`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENGINE_KEYS = (
    "import_s", "open_s", "baseline_rss_mb", "open_rss_mb", "peak_rss_mb",
    "decode_tokens_per_s", "backend", "dtype", "progress_reports", "progress_max_gap_s",
    "slowest_stage", "stage_s", "error",
)  # fmt: skip
LLAMA_KEYS = ("open_s", "peak_rss_mb", "decode_tokens_per_s", "policy", "error")
POLICIES = ("default", "passive")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("open", help="first/later open and peak RSS next to llama.cpp")
    p.add_argument("models", nargs="*", default=["bundled"], metavar="MODEL",
                   help="bundled (default), a .gguf path, or synthetic:ARCH:PLAN")  # fmt: skip
    p.add_argument("--tokens", type=int, default=64, help="greedy decode tokens (default 64)")
    p.add_argument("--no-drop", action="store_true",
                   help="do not try to drop the OS page cache before the first open")  # fmt: skip
    p.add_argument("--no-llama", action="store_true", help="skip llama.cpp")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def run(args: argparse.Namespace) -> int:
    rows = [measure_model(m, args.tokens, not args.no_drop, not args.no_llama) for m in args.models]
    print(json.dumps(rows, indent=2) if args.json else format_report(rows))
    return 0


def resolve_model(model: str) -> Path:
    """The .gguf file behind MODEL (see the module docstring)."""
    from engine.errors import InvalidParamsError

    if model == "bundled":
        from engine.models import bundled_gguf_path

        return Path(bundled_gguf_path())
    if model.startswith("synthetic:"):
        from bench.synthetic import synthetic_model

        _, arch, plan = [*model.split(":"), ""][:3]
        return synthetic_model(arch, plan or "Q4_K_M")
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise InvalidParamsError(
            f"MODEL must be bundled, synthetic:ARCH:PLAN or a .gguf file, got {model!r}"
        )
    return path


def measure_model(model: str, tokens: int, drop: bool = True, llama: bool = True) -> dict[str, Any]:
    """One row: the engine's first and later open, then llama.cpp (both policies)."""
    path = resolve_model(model)
    row: dict[str, Any] = {
        "model": model, "file": str(path), "file_mb": path.stat().st_size / 2**20,
        "tokens": tokens, "load_avg": os.getloadavg()[0], "cores": os.cpu_count(),
    }  # fmt: skip
    blocked = _blocked_file(path)
    with tempfile.TemporaryDirectory(prefix="hearth-open-") as cache:
        row["page_cache"] = drop_page_cache() if drop else "not dropped (--no-drop)"
        first = _child(["engine", str(path), "0", str(blocked)], {"HEARTH_CACHE_DIR": cache})
        later = _child(
            ["engine", str(path), str(tokens), str(blocked)], {"HEARTH_CACHE_DIR": cache}
        )
    row["engine_first"] = {k: first.get(k) for k in ENGINE_KEYS}
    row["engine_later"] = {k: later.get(k) for k in ENGINE_KEYS}
    runs = {p: _llama_child(path, tokens, blocked, p) for p in POLICIES} if llama else {}
    row["llama_cpp_runs"] = runs
    row["llama_cpp"] = best_llama(runs)
    row["ratios"] = ratios(row)
    return row


def drop_page_cache() -> str:
    """Drop the OS page cache (root only); says whether it was dropped, or why not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as knob:
            knob.write("3\n")
    except OSError as exc:
        return f"not dropped ({exc.strerror or exc})"
    return "dropped"


def best_llama(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per figure, llama.cpp's better result over the wait policies (and which policy gave it)."""
    ok = {p: r for p, r in runs.items() if not r.get("error")}
    if not ok:
        first = next(iter(runs.values()), {})
        return {**dict.fromkeys(LLAMA_KEYS), "error": first.get("error", "not run")}
    pick = {"open_s": min, "peak_rss_mb": min, "decode_tokens_per_s": max}
    best: dict[str, Any] = {"error": None}
    for key, choose in pick.items():
        values = {p: r[key] for p, r in ok.items() if r.get(key) is not None}
        best[key] = choose(values.values()) if values else None
    decode = {p: r.get("decode_tokens_per_s") or 0 for p, r in ok.items()}
    best["policy"] = max(decode, key=lambda p: decode[p])
    return best


def ratios(row: dict[str, Any]) -> dict[str, float | None]:
    """Engine / llama.cpp: open times and RSS (below 1: the engine is quicker/leaner), decode."""
    first, later, lc = row["engine_first"], row["engine_later"], row["llama_cpp"]

    def ratio(a: Any, b: Any) -> float | None:
        return a / b if a is not None and b else None

    return {
        "first_open": ratio(_total(first), lc.get("open_s")),
        "later_open": ratio(_total(later), lc.get("open_s")),
        "peak_rss": ratio(later.get("peak_rss_mb"), lc.get("peak_rss_mb")),
        "decode": ratio(later.get("decode_tokens_per_s"), lc.get("decode_tokens_per_s")),
    }


def _total(side: dict[str, Any]) -> float | None:
    """What a user waits for: imports plus the open."""
    if side.get("open_s") is None:
        return None
    return float(side["open_s"]) + float(side.get("import_s") or 0.0)


def _blocked_file(path: Path) -> Path:
    """Control/EOS ids that greedy decoding must not pick, as a .npy (once per file)."""
    from bench.synthetic import _blocked_file as blocked

    return blocked(path)


def _llama_child(path: Path, tokens: int, blocked: Path, policy: str) -> dict[str, Any]:
    env = {"HEARTH_OMP_PASSIVE": "0"}  # engine/__init__ must not set its own policy there
    if policy == "passive":
        env["OMP_WAIT_POLICY"] = "passive"
    result = _child(
        ["llama.cpp", str(path), str(tokens), str(blocked)], env, module="bench.measure"
    )
    result.pop("tokens", None)
    result["policy"] = policy
    if result.get("error"):
        result["peak_rss_mb"] = None
    return result


def _child(
    argv: list[str], env: dict[str, str], module: str = "bench.open", timeout_s: float = 3600
) -> dict[str, Any]:
    """The last JSON line of ``python -m module argv`` in a fresh process, or {"error": ...}."""
    full = {**os.environ, **env}
    if env.get("HEARTH_OMP_PASSIVE") == "0" and "OMP_WAIT_POLICY" not in env:
        full.pop("OMP_WAIT_POLICY", None)  # llama.cpp's own default policy
    cmd = [sys.executable, "-m", module, *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return dict(json.loads(lines[-1]))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": tail if proc.returncode >= 0 else f"crashed ({-proc.returncode}): {tail}"}


# ------------------------------------------------------------------ the engine's child


def engine_child(path: Path, tokens: int, blocked_path: Path, started: float) -> dict[str, Any]:
    """Open ``path`` with `engine.Engine` (timed from the process start), then greedy-decode."""
    import numpy as np

    from bench.measure import WARMUP_IDS, current_rss_mb, prompt_ids
    from bench.peers import peak_rss_mb
    from engine.engine import Engine
    from engine.types import LoadProgress

    imported = time.perf_counter()
    result: dict[str, Any] = {"import_s": imported - started, "baseline_rss_mb": current_rss_mb()}
    stamps: list[tuple[float, LoadProgress]] = []
    engine = Engine(str(path), progress=lambda p: stamps.append((time.perf_counter(), p)))
    opened = time.perf_counter()
    result.update(
        open_s=opened - imported,
        open_rss_mb=current_rss_mb(),
        **_progress_figures(stamps, imported, opened),
    )
    runner, blocked = engine.runner, np.load(blocked_path)
    info = engine.info
    result.update(backend=info.backend, dtype=info.dtype)
    if tokens > 0:
        vocab = int(blocked.size)

        def pick(logits: Any) -> int:
            row = np.array(logits[-1], dtype=np.float32)[:vocab]
            row[blocked[: row.size]] = -np.inf
            return int(row.argmax())

        runner.extend(WARMUP_IDS, last_only=True)
        runner.reset()
        out = [pick(runner.extend([i % vocab for i in prompt_ids()], last_only=True))]
        start = time.perf_counter()
        for _ in range(tokens):
            out.append(pick(runner.extend(out[-1:], last_only=True)))
        result["decode_tokens_per_s"] = tokens / (time.perf_counter() - start)
    engine.close()
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def _progress_figures(stamps: list[tuple[float, Any]], start: float, end: float) -> dict[str, Any]:
    """How many reports, the longest silence between them, and the slowest stage."""
    times = [start] + [t for t, _ in stamps] + [end]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    spans: dict[str, float] = {}
    for (t, p), t_next in zip(stamps, times[2:], strict=False):
        spans[p.stage] = spans.get(p.stage, 0.0) + (t_next - t)
    slowest = max(spans, key=lambda s: spans[s]) if spans else None
    return {
        "progress_reports": len(stamps),
        "progress_max_gap_s": max(gaps) if gaps else None,
        "slowest_stage": f"{slowest} {spans[slowest]:.1f}s" if slowest else None,
        "stage_s": spans,  # seconds from each stage's reports to the next stage's (or the end)
    }


# ------------------------------------------------------------------ the report


def format_report(rows: list[dict[str, Any]]) -> str:
    table = [["model", "", "first open s", "later open s", "peak RSS MB", "decode tok/s"]]
    notes: list[str] = []
    for r in rows:
        first, later, lc, q = r["engine_first"], r["engine_later"], r["llama_cpp"], r["ratios"]
        name = f"{Path(r['file']).name} ({r['file_mb']:.0f} MB)"
        table.append([name, "engine", *_cells(_total(first), _total(later), later)])
        table.append(["", "llama.cpp", *_cells(lc.get("open_s"), lc.get("open_s"), lc)])
        table.append(["", "ratio", _f(q["first_open"], "{:.1f}x"), _f(q["later_open"], "{:.1f}x"),
                      _f(q["peak_rss"], "{:.2f}x"), _f(q["decode"], "{:.2f}x")])  # fmt: skip
        notes.append(_notes(name, first, later, lc))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table]
    r0 = rows[0] if rows else {}
    out += notes
    out.append(
        f"load average {r0.get('load_avg', 0):.1f} on {r0.get('cores')} cores (a busy machine "
        f"slows every figure); page cache before the first open: {r0.get('page_cache')}; "
        "llama.cpp: the better of its default and passive OpenMP wait policies"
    )
    return "\n".join(out)


def _cells(first: Any, later: Any, side: dict[str, Any]) -> list[str]:
    return [_f(first), _f(later), _f(side.get("peak_rss_mb"), "{:.0f}"),
            _f(side.get("decode_tokens_per_s"))]  # fmt: skip


def _notes(name: str, first: dict[str, Any], later: dict[str, Any], lc: dict[str, Any]) -> str:
    """The engine's RSS split and progress figures, and any errors, for one row."""
    text = (
        f"{name}: engine RSS {_f(later.get('baseline_rss_mb'), '{:.0f}')} MB after imports, "
        f"{_f(later.get('open_rss_mb'), '{:.0f}')} MB once open; first open: "
        f"{first.get('progress_reports')} progress reports, longest silence "
        f"{_f(first.get('progress_max_gap_s'))} s, slowest stage {first.get('slowest_stage')}"
    )
    sides = (("engine first", first), ("engine later", later), ("llama.cpp", lc))
    errors = [f"{label}: {side['error']}" for label, side in sides if side.get("error")]
    return text + "".join(f"; {e}" for e in errors)


def _f(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def main(argv: list[str]) -> int:
    """``python -m bench.open engine GGUF TOKENS BLOCKED.npy``: one JSON line (a child)."""
    started = time.perf_counter()
    kind, path, tokens, blocked = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    try:
        if kind != "engine":
            raise ValueError(f"unknown child kind {kind!r}")
        result = engine_child(path, tokens, blocked, started)
    except Exception as exc:  # reported in the row
        result = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
