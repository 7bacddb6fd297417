"""`python -m engine models`: the GGUF models on this machine.

Owns only flags and printing: Hearth's models folder (``HEARTH_MODELS_DIR`` overrides) plus the
GGUFs LM Studio, GPT4All and Ollama keep, each read from its header alone (cached, so a second
listing is fast). ``--json`` prints one JSON list of objects with path, name, architecture,
quantization, size_bytes, parameters, context_length, ram_estimate_bytes, fast_path, mmproj
(the vision projector paired with it, "" for none; a projector is never listed as a model) and
a few more fields the app uses. ``--catalogue`` prints Hearth's curated catalogue instead:
each model with its repo, size (for a mixture of experts also the parameters a token uses),
licence and the vision projector it reads images with; ``--json`` then prints the catalogue's
entries.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from typing import Any

from engine.hub.catalogue import load_catalogue
from engine.hub.library import list_models, models_dir
from engine.hub.names import printable


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "models", help="List the GGUF models on this machine", description=__doc__
    )
    p.add_argument(
        "--hearth-only",
        action="store_true",
        help="only Hearth's models folder, not other apps' downloads",
    )
    p.add_argument(
        "--catalogue",
        action="store_true",
        help="Hearth's curated catalogue (repo, size, licence) instead of the files here",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")


def run(args: argparse.Namespace) -> int:
    if args.catalogue:
        return print_catalogue(as_json=args.json)

    models = list_models(include_other_apps=not args.hearth_only)
    if args.json:
        print(json.dumps([m.to_dict() for m in models], indent=1))
        return 0
    if not models:
        print(f"no models yet in {models_dir()} (python -m engine pull REPO --quant Q4_K_M)")
        return 0

    for m in models:
        m = replace(  # names, paths and reasons come from files: no terminal escapes (A15)
            m, name=printable(m.name), path=printable(m.path), unreadable=printable(m.unreadable)
        )
        if m.unreadable:  # listed, so the user sees it and can delete it; never a traceback
            print(f"{m.name}  [unreadable: {m.unreadable}, {m.source}]\n  {m.path}")
            continue
        fast = "fast path" if m.fast_path else "torch path"
        sees = ", can see" if m.mmproj else ""
        print(
            f"{m.name}  [{m.architecture} {m.quantization}, {m.size_bytes / 1e9:.2f} GB, "
            f"~{m.ram_estimate_bytes / 2**30:.1f} GiB RAM, {fast}, {m.source}{sees}]\n  {m.path}"
        )
        if m.mmproj:
            print(f"  vision projector: {printable(m.mmproj)}")
    return 0


def print_catalogue(*, as_json: bool) -> int:

    entries = load_catalogue()
    if as_json:
        print(json.dumps([asdict(e) for e in entries], indent=1))
        return 0
    for e in entries:
        size = f"{e.params_b:g}B"
        if e.active_params_b is not None:
            size += f" ({e.active_params_b:g}B per token)"
        marks = [m for m, on in (("Chinese", e.chinese), ("reasoning", e.reasoning)) if on]
        marks += ["recommended"] if e.recommended else []
        text_only = f"; reads images with its mmproj ({e.mmproj_file})" if e.mmproj_file else ""
        print(
            f"{e.name}  [{size}, {e.default_quant}, licence: {e.licence}{text_only}]"
            f"{'  ' + ' '.join(marks) if marks else ''}\n  {e.repo_id}"
        )
    return 0
