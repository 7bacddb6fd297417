"""`python -m engine encode-image`: an image through an mmproj, one row per image token, to .npy.

Owns only flags and output: ``--mmproj P.gguf --image FILE [--image-budget N] --out FILE.npy``
writes the projector's output (float32, (tokens, width)) and prints the token count, the encode
time and whether the cache answered (``--json``: one record). ``--no-cache`` encodes afresh.
Bad images, budgets and mmprojs exit 2 with one line (`engine.__main__`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from engine.vision.cache import EmbeddingCache
from engine.vision.encode import ImageEncoder, vision_cache_dir


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "encode-image", help="Encode an image with a vision projector (mmproj)", description=__doc__
    )
    p.add_argument("--mmproj", required=True, type=Path, help="the vision projector .gguf")
    p.add_argument("--image", required=True, type=Path, help="PNG, JPEG, WebP, GIF, BMP")
    p.add_argument(
        "--image-budget",
        type=int,
        default=None,
        help="image tokens at most (Gemma 4: 70, 140, 280, 560 or 1120; Qwen: 8 to 16384)",
    )
    p.add_argument("--out", required=True, type=Path, help="where to write the rows (.npy)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor keep the cache")
    p.add_argument("--json", action="store_true", help="print one JSON record")


def run(args: argparse.Namespace) -> int:
    cache = EmbeddingCache(None if args.no_cache else vision_cache_dir())
    encoder = ImageEncoder(args.mmproj, cache)
    result = encoder.encode(args.image, args.image_budget)
    np.save(args.out, np.asarray(result.rows), allow_pickle=False)
    record = {
        "image_tokens": result.n_tokens,
        "width": int(result.rows.shape[1]),
        "image_encode_s": round(result.seconds, 4),
        "cache_hit": result.cache_hit,
        "projector": encoder.mmproj.params.projector,
        "out": str(args.out),
    }
    if args.json:
        print(json.dumps(record))
    else:
        hit = f" (cache hit: {result.cache_hit})" if result.cache_hit else ""
        print(
            f"{result.n_tokens} image tokens x {record['width']} -> {args.out} "
            f"in {result.seconds:.2f} s{hit}"
        )
    return 0
