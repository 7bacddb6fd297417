"""`python -m engine inspect (FILE.gguf | URL)`: what one GGUF model is, from its header alone.

Owns only flags and printing. A URL (a Hub ``resolve/`` link or any server that honours Range)
is read by range requests, never downloaded whole. ``--json`` prints the same fields as
``models --json`` for the one file; the text form adds the fit verdict for this machine.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.errors import ModelNotFoundError
from engine.hub.fit import assess
from engine.hub.names import printable
from engine.hub.summary import summarize_file


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "inspect", help="Describe a GGUF file or URL from its header", description=__doc__
    )
    p.add_argument("target", help="a .gguf file or an http(s) URL of one")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def run(args: argparse.Namespace) -> int:

    summary = _summarize(args.target)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=1))
        return 0
    fit = assess(summary)
    from dataclasses import replace

    summary = replace(  # what the file or server says: no terminal escapes (issue 22 A15)
        summary,
        name=printable(summary.name),
        architecture=printable(summary.architecture),
        quantization=printable(summary.quantization),
    )
    speed = f", about {fit.expected_tok_s:.1f} tok/s" if fit.expected_tok_s else ""
    print(
        f"{summary.name}\n  {summary.architecture}, {summary.quantization}, "
        f"{summary.parameters / 1e9:.2f}B parameters, context {summary.context_length}\n"
        f"  {summary.size_bytes / 1e9:.2f} GB file, ~{summary.ram_estimate_bytes / 2**30:.1f} "
        f"GiB RAM, {'fast path' if summary.fast_path else 'torch path'}\n"
        f"  verdict: {fit.verdict.replace('_', ' ')}{speed} ({fit.note})"
    )
    return 0


def _summarize(target: str) -> Any:
    if target.startswith(("http://", "https://")):
        from engine.hub.remote_header import summarize_url

        return summarize_url(target)
    from pathlib import Path

    path = Path(target).expanduser()
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is not a file")
    return summarize_file(path)
