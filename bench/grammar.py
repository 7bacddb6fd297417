"""`python -m bench grammar`: what a JSON-schema constraint costs per decoded token.

Runs the same prompt on the same engine twice per round, free and under a JSON schema
(`response_format`), alternating for ``--repeat`` rounds and keeping each side's best decode
rate (other work on a shared machine only slows a run down). Then replays the constrained
reply's tokens through the grammar alone (`engine.tools.grammar.TokenMask`: compute the mask,
follow the token) to time the mask by itself. The overhead is reported both ways: from the two
decode rates, and as the mask's time per token over the free decode's time per token.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 60},
        "year": {"type": "integer"},
        "genres": {"type": "array", "items": {"enum": ["fiction", "history", "science", "poetry"]}},
        "characters": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 30},
                    "role": {"type": "string", "maxLength": 40},
                },
                "required": ["name", "role"],
                "additionalProperties": False,
            },
            "maxItems": 4,
        },
        "summary": {"type": "string", "maxLength": 160},
    },
    "required": ["title", "year", "genres", "characters", "summary"],
    "additionalProperties": False,
}
PROMPT = (
    "Describe the novel Moby-Dick as JSON with its title, year, genres, characters and summary."
)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("grammar", help="Decode tok/s with and without a JSON schema")
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf")
    p.add_argument("--backend", default=None, help="engine backend (default: the engine's choice)")
    p.add_argument("--max-tokens", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3, help="rounds; each side's best rate is kept")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--libraries",
        action="store_true",
        help="instead: llguidance, xgrammar and outlines-core side by side (bench.grammar_libs)",
    )
    p.add_argument(
        "--qwen-tiktoken", type=Path, default=None, help="with --libraries: Qwen's vocab"
    )


def run(args: argparse.Namespace) -> int:
    if args.libraries:
        from bench.grammar_libs import compare, table

        libraries = compare(args.qwen_tiktoken)
        print(json.dumps(libraries, indent=2) if args.json else table(libraries))
        return 0
    from engine.engine import Engine
    from engine.types import GenerationRequest, Message, ResponseFormat, SamplingParams

    kwargs = {"backend": args.backend} if args.backend else {}
    engine = Engine(args.model, **kwargs)
    try:
        params = SamplingParams(temperature=0.0, max_new_tokens=args.max_tokens)
        messages = (Message("user", PROMPT),)
        fmt = ResponseFormat("json_schema", schema=json.dumps(SCHEMA), name="book")
        free = GenerationRequest(messages, params)
        constrained = GenerationRequest(messages, params, response_format=fmt)
        _finish(engine, constrained)  # builds the grammar tokenizer once, as a first request does
        rows: dict[str, dict[str, Any]] = {}
        for _ in range(args.repeat):
            for name, request in (("free", free), ("json_schema", constrained)):
                result = _finish(engine, request)
                if name not in rows or result["decode_tok_s"] > rows[name]["decode_tok_s"]:
                    rows[name] = result
        mask_us = _mask_cost_us(engine, constrained, rows["json_schema"]["token_ids"])
    finally:
        engine.close()
    report = _report(engine.info.name, engine.info.backend, rows, mask_us)
    print(json.dumps(report, indent=2) if args.json else _table(report))
    return 0


def _finish(engine: Any, request: Any) -> dict[str, Any]:
    from engine.types import Finished

    finished = None
    for event in engine.generate(request):
        if isinstance(event, Finished):
            finished = event
    assert finished is not None
    if finished.error:
        print(f"error: {finished.error}", file=sys.stderr)
    return {
        "decode_tok_s": finished.stats.decode_tokens_per_s,
        "tokens": finished.stats.completion_tokens,
        "finish": str(finished.reason),
        "text": finished.text,
        "token_ids": list(finished.token_ids),
    }


def _mask_cost_us(engine: Any, request: Any, token_ids: list[int]) -> float:
    """Mean microseconds per token of the grammar alone (mask + follow) on the reply's ids."""
    from engine.tools.grammar import token_mask_for

    mask = token_mask_for(engine.tokenizer, request, engine.eos_ids)
    assert mask is not None
    vocab = len(engine.tokenizer)
    start = time.perf_counter()
    for token in token_ids:
        mask.allowed(vocab)
        mask.advance(token)
    return (time.perf_counter() - start) / max(len(token_ids), 1) * 1e6


def _report(
    model: str, backend: str, rows: dict[str, dict[str, Any]], mask_us: float
) -> dict[str, Any]:
    free, constrained = rows["free"]["decode_tok_s"], rows["json_schema"]["decode_tok_s"]
    free_ms = 1000.0 / free if free else 0.0
    return {
        "model": model,
        "backend": backend,
        "free_decode_tok_s": round(free, 2),
        "json_schema_decode_tok_s": round(constrained, 2),
        "overhead_pct_from_rates": round((free / constrained - 1) * 100, 1)
        if constrained
        else None,
        "mask_us_per_token": round(mask_us, 1),
        "free_ms_per_token": round(free_ms, 2),
        "overhead_pct_mask_alone": round(mask_us / 10 / free_ms, 2) if free_ms else None,
        "json_schema_tokens": rows["json_schema"]["tokens"],
        "json_schema_finish": rows["json_schema"]["finish"],
        "json_schema_valid_json": _is_json(rows["json_schema"]["text"]),
        "json_schema_text": rows["json_schema"]["text"][:500],
    }


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _table(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"constrained decoding on {r['model']} ({r['backend']}), greedy, same prompt:",
            f"  {'free decode':<28}{r['free_decode_tok_s']:>10.1f} tok/s",
            f"  {'json_schema decode':<28}{r['json_schema_decode_tok_s']:>10.1f} tok/s"
            f"   ({r['json_schema_tokens']} tokens, {r['json_schema_finish']}, "
            f"valid JSON: {r['json_schema_valid_json']})",
            f"  {'overhead from the rates':<28}{r['overhead_pct_from_rates']:>10} %",
            f"  {'grammar alone per token':<28}{r['mask_us_per_token']:>10.1f} us"
            f"   = {r['overhead_pct_mask_alone']} % of a free token ({r['free_ms_per_token']} ms)",
        ]
    )
