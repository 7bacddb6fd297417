"""`python -m engine perplexity`: the quality cost of a backend, measured on a text.

Owns the measurement: the text's tokens (no special tokens added) go through a Runner in
chunks with the KV cache carried over, every token after the first is scored, and the result is
exp(mean negative log-likelihood). Past the context window the cache restarts (the first token
of each window is not scored). Prints ``{"perplexity": F, "tokens": N}`` with ``--json``, where N
is the number of scored tokens. With ``--image`` (and a vision projector) the text follows the
pictures (each as its projector's begin text, image tokens, end text; no chat template) and only
the text's tokens are scored, within one context window. Does not own model loading
(`engine.engine.Engine`) or the comparison with llama.cpp on the same ids
(`python -m bench perplexity`).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.cli.generate import add_image_flags, image_refs
from engine.errors import InvalidParamsError

CHUNK = 512  # tokens per forward: bounds the (chunk x vocab) float32 logits at ~100 MB


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("perplexity", help="Measure perplexity of a text")
    p.add_argument("--model", default="bundled", help="bundled, a .gguf file or a model folder")
    p.add_argument("--file", required=True, type=Path, help="UTF-8 text to score")
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "float16", "bfloat16"))
    p.add_argument("--backend", default="auto", choices=("auto", "torch", "onnx"))
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_image_flags(p)


def run(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParamsError(f"cannot read --file {args.file}: {exc}") from exc
    result = _engine_result(args, text)
    value, scored = result["perplexity"], result["tokens"]
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"perplexity {value:.4f} over {scored} tokens ({result['backend']}, {result['dtype']})"
        )
    return 0


def _engine_result(args: argparse.Namespace, text: str) -> dict[str, Any]:
    from engine.engine import Engine

    images = image_refs(args)
    engine = Engine(
        args.model, dtype=args.dtype, device=args.device, backend=args.backend, mmproj=args.mmproj
    )
    ids = engine.tokenize(text)
    if len(ids) < 2:
        raise InvalidParamsError(f"--file {args.file} has fewer than 2 tokens to score")
    if images:
        prefix = engine.image_ids(images)
        room = engine.runner.context_window - len(prefix)
        if room < 2:
            raise InvalidParamsError("the images leave no room in the context window for text")
        terms = token_nll_after(engine.runner, prefix, ids[:room])
        value, scored = perplexity_of(terms), len(terms)
    else:
        value, scored = perplexity(engine.runner, ids)
    return {
        "perplexity": value,
        "tokens": scored,
        "backend": engine.info.backend,
        "dtype": engine.info.dtype,
    }


def perplexity(runner: Any, ids: Sequence[int], chunk: int = CHUNK) -> tuple[float, int]:
    """(exp(mean NLL), tokens scored) of ``ids`` under ``runner`` (a `Runner`)."""
    terms = token_nll(runner, ids, chunk)
    return perplexity_of(terms), len(terms)


def perplexity_of(terms: Sequence[float]) -> float:
    """exp of the mean of per-token negative log-likelihoods (`token_nll`)."""
    return math.exp(math.fsum(terms) / len(terms))


def token_nll_after(
    runner: Any, prefix: Sequence[int], ids: Sequence[int], chunk: int = CHUNK
) -> list[float]:
    """Each of ``ids``'s negative log-likelihoods after ``prefix`` (not scored; the images'
    ids), all in one window: the prefix's last logits predict the first id."""
    import torch

    runner.reset()
    pending = torch.as_tensor(runner.extend(list(prefix), last_only=True)).double()  # (1, V)
    terms: list[float] = []
    for start in range(0, len(ids), chunk):
        piece = list(ids[start : start + chunk])
        logits = torch.cat([pending, torch.as_tensor(runner.extend(piece)).double()])
        nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(piece), reduction="none")
        terms.extend(float(v) for v in nll)
        pending = logits[-1:]
    runner.reset()
    return terms


def token_nll(runner: Any, ids: Sequence[int], chunk: int = CHUNK) -> list[float]:
    """Each scored token's negative log-likelihood under ``runner``, in order (what a paired
    comparison of two runners on the same ids needs; `perplexity` is exp of their mean)."""
    import torch

    runner.reset()
    terms: list[float] = []
    pending: torch.Tensor | None = None  # logits of the previous chunk's last position
    for start in range(0, len(ids), chunk):
        piece = list(ids[start : start + chunk])
        if len(runner.cached_ids) + len(piece) > runner.context_window:
            runner.reset()
            pending = None
        logits = torch.as_tensor(runner.extend(piece)).double()  # (T, V); Runners hand numpy
        if pending is not None:  # the previous chunk's last row predicts this chunk's first id
            logits = torch.cat([pending, logits])
            piece = [int(ids[start - 1]), *piece]
        targets = torch.tensor(piece[1:])
        nll = torch.nn.functional.cross_entropy(logits[:-1], targets, reduction="none")
        terms.extend(float(v) for v in nll)
        pending = logits[-1:]
    runner.reset()
    return terms
