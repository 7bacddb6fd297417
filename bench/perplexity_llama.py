"""llama.cpp's perplexity over the engine's token ids, and the engine-vs-llama.cpp comparison.

Owns `LlamaCppRunner`: the part of the Runner interface `engine.cli.perplexity.perplexity` uses
(``extend`` / ``reset`` / ``cached_ids`` / ``context_window``) over llama-cpp-python with
``logits_all``, so the one `perplexity()` function — same chunks, same cache carry-over and
window restarts, same scoring — measures both sides on the same ids (the engine's tokenizer, no
special tokens added). ``python -m bench perplexity --file F`` prints llama.cpp's figure;
``--compare [--requantized]`` prints engine-onnx vs llama.cpp per file, with the relative
difference and its 95 % interval (`run_compare`, `paired_interval`: the two sides' per-token
log-likelihoods are paired, and their differences averaged in blocks of `BLOCK` tokens,
whose spread gives the interval; on a few hundred tokens of a random-weight file it is
often wider than ±1 %, so a difference there says little). Does not own the measurement
itself or loading the engine.

gpt-oss files: llama.cpp rounds YaRN's correction range outward for every model
(``ggml_rope_yarn_corr_dims``), where gpt-oss's own code, transformers (``truncate: false``) and
the engine do not; on random weights that rope difference alone moves perplexity by ~3 %. So the
comparison also measures the engine with llama.cpp's rounding (`llama_cpp_yarn`), which leaves
only the kernels' own error in the difference.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from engine.cli.perplexity import CHUNK, perplexity, perplexity_of, token_nll
from engine.errors import EngineError, InvalidParamsError

NOT_INSTALLED = "llama-cpp-python is not installed (make bench-peers)"


class LlamaCppRunner:
    """llama.cpp holding one sequence; ``extend`` returns every position's logits (float32)."""

    backend = "llama.cpp"

    def __init__(self, path: Path, context_window: int, longest: int) -> None:
        """``longest``: the most tokens the cache will hold (n_ctx is no larger than needed:
        llama-cpp-python keeps an n_ctx x vocab float32 array of logits)."""
        from llama_cpp import Llama

        from bench.measure import physical_cores

        n_ctx = max(min(context_window, longest), 16)
        threads = physical_cores()
        self.context_window = context_window
        self.llm = Llama(
            str(path), n_ctx=n_ctx, n_batch=min(n_ctx, CHUNK), n_ubatch=min(n_ctx, CHUNK),
            logits_all=True, n_threads=threads, n_threads_batch=threads, verbose=False,
        )  # fmt: skip

    @property
    def cached_ids(self) -> list[int]:
        return [int(i) for i in self.llm.input_ids[: self.llm.n_tokens]]

    def extend(self, ids: Sequence[int], last_only: bool = False) -> Any:
        import numpy as np

        start = self.llm.n_tokens
        self.llm.eval(list(ids))
        rows = self.llm.scores[start : start + len(ids)]
        return np.array(rows[-1:] if last_only else rows, dtype=np.float32)  # as a Runner does

    def reset(self) -> None:
        self.llm.reset()


def gguf_path(model: str) -> Path:
    from engine.models import resolve_model

    spec = resolve_model(model)
    if spec.kind != "gguf":
        raise InvalidParamsError(f"llama.cpp needs a .gguf model; {model} is a {spec.kind} model")
    return Path(spec.path)


def engine_ids(path: Path, text: str) -> list[int]:
    """``text`` through the engine's tokenizer for ``path`` (as `Engine.tokenize`)."""
    from transformers import AutoTokenizer

    from engine.loader import read_gguf_header

    tokenizer = AutoTokenizer.from_pretrained(read_gguf_header(path, lambda _p: None))
    return list(tokenizer.encode(text, add_special_tokens=False))


def llama_cpp_perplexity(
    path: Path, ids: Sequence[int], context_window: int | None = None
) -> tuple[float, int]:
    """(perplexity, tokens scored) of ``ids`` under llama.cpp, chunked as the engine does.

    ``context_window`` defaults to the engine's default window for the file.
    """
    terms = llama_cpp_nll(path, ids, context_window)
    return perplexity_of(terms), len(terms)


def llama_cpp_nll(path: Path, ids: Sequence[int], context_window: int | None = None) -> list[float]:
    """Each scored token's negative log-likelihood under llama.cpp (`llama_cpp_perplexity`)."""
    from bench.peers import llama_cpp_available

    if not llama_cpp_available():
        raise InvalidParamsError(NOT_INSTALLED)
    if context_window is None:
        from engine.gguf.header import read_gguf_summary
        from engine.models import context_window_within

        summary = read_gguf_summary(path)
        context_window = context_window_within(summary.arch_int("context_length"), None)
    runner = LlamaCppRunner(path, context_window, len(ids))
    return token_nll(runner, ids)


def llama_cpp_result(model: str, text: str) -> dict[str, Any]:
    """``--backend llama.cpp``: the result dict of `engine.cli.perplexity.run`."""
    from bench.peers import llama_cpp_available

    if not llama_cpp_available():
        raise InvalidParamsError(NOT_INSTALLED)
    path = gguf_path(model)
    ids = _checked(engine_ids(path, text))
    value, scored = llama_cpp_perplexity(path, ids)
    return {"perplexity": value, "tokens": scored, "backend": "llama.cpp", "dtype": "gguf"}


def _checked(ids: list[int]) -> list[int]:
    if len(ids) < 2:
        raise InvalidParamsError("the text has fewer than 2 tokens to score")
    return ids


# ------------------------------------------------------------------ --compare


def compare_one(label: str, path: Path, text: str) -> dict[str, Any]:
    """engine-onnx and llama.cpp perplexity of ``text`` on ``path``: same ids, same window."""
    from engine.engine import Engine

    row: dict[str, Any] = {"model": label, "file": str(path)}
    try:
        engine = Engine(str(path), backend="onnx")
        ids = _checked(engine.tokenize(text))
        mine_nll = token_nll(engine.runner, ids)
        mine, scored = perplexity_of(mine_nll), len(mine_nll)
        window = engine.runner.context_window
        row.update(engine_perplexity=mine, tokens=scored, dtype=engine.info.dtype)
        rounding_differs = yarn_rounding_differs(getattr(engine.runner, "hparams", None))
        engine.close()
        if rounding_differs:  # gpt-oss: the engine again, rotating as llama.cpp does
            with llama_cpp_yarn():
                engine = Engine(str(path), backend="onnx")
                row["engine_perplexity_llama_yarn"] = perplexity(engine.runner, ids)[0]
                engine.close()
        theirs_nll = llama_cpp_nll(path, ids, window)
        theirs = perplexity_of(theirs_nll)
    except (EngineError, RuntimeError, OSError, ValueError) as exc:
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    if "engine_perplexity_llama_yarn" in row:
        row["relative_difference_llama_yarn"] = row["engine_perplexity_llama_yarn"] / theirs - 1
    low, high = paired_interval(mine_nll, theirs_nll)
    return {**row, "llama_cpp_perplexity": theirs, "relative_difference": mine / theirs - 1,
            "difference_95": [low, high]}  # fmt: skip


BLOCK = 64  # tokens per block of `paired_interval`: neighbouring tokens' errors correlate


def paired_interval(mine: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    """A 95 % interval of the perplexity ratio − 1, from paired per-token NLLs.

    The per-token differences are averaged in blocks of `BLOCK` consecutive tokens (batch
    means: a token's error carries into the next ones through the context, so single tokens
    are not independent; the last block takes the remainder); the interval is the mean over
    all tokens ± Student's t times the blocks' standard error, exponentiated. Fewer than two
    blocks: (nan, nan)."""
    diffs = [a - b for a, b in zip(mine, theirs, strict=True)]
    count = len(diffs) // BLOCK
    if count < 2:
        return math.nan, math.nan
    edges = [i * BLOCK for i in range(count)] + [len(diffs)]
    blocks = [math.fsum(diffs[a:b]) / (b - a) for a, b in itertools.pairwise(edges)]
    mean = math.fsum(diffs) / len(diffs)
    centre = math.fsum(blocks) / count
    spread = math.sqrt(math.fsum((b - centre) ** 2 for b in blocks) / (count - 1))
    half = _t95(count - 1) * spread / math.sqrt(count)
    return math.exp(mean - half) - 1, math.exp(mean + half) - 1


# Student's t, two-sided 95 %, by degrees of freedom (1-30); 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def _t95(df: int) -> float:
    return _T95[df - 1] if df <= len(_T95) else 1.96


def yarn_rounding_differs(hp: Any) -> bool:
    """Whether llama.cpp rotates ``hp``'s file differently: YaRN with the correction range
    unrounded (gpt-oss), which llama.cpp rounds outward as it does for every YaRN model."""
    return hp is not None and hp.yarn_factor > 1.0 and not hp.yarn_truncate


@contextmanager
def llama_cpp_yarn() -> Iterator[None]:
    """Runners opened inside build YaRN tables with llama.cpp's rounded correction range.

    A what-if for the comparison only (the engine keeps gpt-oss's unrounded range, the one
    the model was trained with): `engine.arch.hparams.rope_tables` calls the
    ``yarn_frequencies`` it imported when a runner opens, so that name is swapped where it is
    looked up (swapping it in `engine.arch.yarn` alone changed nothing once hparams imported it
    at module level, and this comparison silently measured the unrounded range twice).
    """
    import engine.arch.hparams as hparams

    name = "yarn_frequencies"  # hparams' own binding (not re-exported, so reached by name)
    original = getattr(hparams, name)

    def rounded(hp: Any, base: float, dim: int) -> tuple[Any, float]:
        return original(replace(hp, yarn_truncate=True), base, dim)

    setattr(hparams, name, rounded)
    try:
        yield
    finally:
        setattr(hparams, name, original)


def compare_models(model: str, requantized: bool) -> list[tuple[str, Any]]:
    """(label, path or a function making it) for each file compared."""
    if not requantized:
        return [(model, lambda: gguf_path(model))]
    from bench.requant import FTYPES, requantized_model

    out: list[tuple[str, Any]] = [("bundled Q4_1", lambda: gguf_path("bundled"))]
    return out + [(f"requantized {f}", partial(requantized_model, f)) for f in FTYPES]


def run_compare(args: argparse.Namespace, text: str) -> int:
    rows = []
    for label, make in compare_models(args.model, args.requantized):
        try:
            path = make()
        except (EngineError, RuntimeError, OSError) as exc:
            rows.append({"model": label, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append(compare_one(label, path, text))
    print(json.dumps({"rows": rows}, indent=2) if args.json else format_compare(rows))
    return 0


def format_compare(rows: list[dict[str, Any]]) -> str:
    headers = ("model", "tokens", "engine-onnx", "llama.cpp", "difference", "95% interval")
    lines = [headers]
    for r in rows:
        if "error" in r:
            lines.append((r["model"], "-", "-", "-", f"error: {r['error']}", ""))
            continue
        cells = (r["model"], str(r["tokens"]), f"{r['engine_perplexity']:.4f}")
        diff = f"{100 * r['relative_difference']:+.2f}%"
        low, high = r["difference_95"]
        interval = "-" if math.isnan(low) else f"{100 * low:+.2f}% … {100 * high:+.2f}%"
        lines.append((*cells, f"{r['llama_cpp_perplexity']:.4f}", diff, interval))
        if "engine_perplexity_llama_yarn" in r:  # gpt-oss (see the module docstring)
            rounded = f"{r['engine_perplexity_llama_yarn']:.4f}"
            diff = f"{100 * r['relative_difference_llama_yarn']:+.2f}%"
            lines.append(("  with llama.cpp's YaRN rounding", "", rounded, "", diff, ""))
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join(
        " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("perplexity", help="llama.cpp's perplexity on the engine's token ids")
    p.add_argument("--model", default="bundled", help="bundled or a .gguf file")
    p.add_argument("--file", required=True, type=Path, help="UTF-8 text to score")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--compare", action="store_true", help="engine-onnx next to llama.cpp")
    p.add_argument(
        "--requantized",
        action="store_true",
        help="with --compare: the bundled model and its llama.cpp requantizations",
    )


def run(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParamsError(f"cannot read --file {args.file}: {exc}") from exc
    if args.compare:
        return run_compare(args, text)
    result = llama_cpp_result(args.model, text)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"perplexity {result['perplexity']:.4f} over {result['tokens']} tokens (llama.cpp)")
    return 0
