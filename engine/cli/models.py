"""`python -m engine models`: the GGUF models on this machine.

Owns only flags and printing: Hearth's models folder (``HEARTH_MODELS_DIR`` overrides) plus the
GGUFs LM Studio, GPT4All and Ollama keep, each read from its header alone (cached, so a second
listing is fast). ``--json`` prints one JSON list of objects with path, name, architecture,
quantization, size_bytes, parameters, context_length, ram_estimate_bytes, fast_path (and a few
more fields the app uses).
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "models", help="List the GGUF models on this machine", description=__doc__
    )
    p.add_argument(
        "--hearth-only",
        action="store_true",
        help="only Hearth's models folder, not other apps' downloads",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")


def run(args: argparse.Namespace) -> int:
    from engine.hub.library import list_models, models_dir

    models = list_models(include_other_apps=not args.hearth_only)
    if args.json:
        print(json.dumps([m.to_dict() for m in models], indent=1))
        return 0
    if not models:
        print(f"no models yet in {models_dir()} (python -m engine pull REPO --quant Q4_K_M)")
        return 0
    for m in models:
        fast = "fast path" if m.fast_path else "torch path"
        print(
            f"{m.name}  [{m.architecture} {m.quantization}, {m.size_bytes / 1e9:.2f} GB, "
            f"~{m.ram_estimate_bytes / 2**30:.1f} GiB RAM, {fast}, {m.source}]\n  {m.path}"
        )
    return 0
