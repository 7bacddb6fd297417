"""`python -m engine tokenize`: the token ids of a text (no special tokens added).

Owns only flags and printing: ``{"ids": [...]}`` with ``--json``, else ids separated by spaces.
Loads the tokenizer through the same model resolution as generation.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.loader import load_tokenizer, read_gguf_header
from engine.models import resolve_model


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("tokenize", help="Print the token ids of a text", description=__doc__)
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf")
    p.add_argument("--json", action="store_true", help='print {"ids": [...]}')
    p.add_argument("text", help="the text to tokenize")


def run(args: argparse.Namespace) -> int:
    ids = load_tokenizer_ids(args.model, args.text)
    print(json.dumps({"ids": ids}) if args.json else " ".join(map(str, ids)))
    return 0


def load_tokenizer_ids(model: str, text: str) -> list[int]:
    """Tokenize with the model's tokenizer only (no weights are loaded): the one the engine
    loads (for a .gguf the engine's own, without importing transformers)."""

    spec = resolve_model(model)
    folder = read_gguf_header(spec.path, lambda _p: None) if spec.kind == "gguf" else spec.path
    return list(load_tokenizer(folder).encode(text, add_special_tokens=False))
