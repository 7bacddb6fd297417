"""`python -m engine pull REPO_ID (--file NAME | --quant TAG)`: download a GGUF from the Hub.

Owns only flags and printing. With ``--json`` every line is one JSON object:
``{"type":"progress","downloaded":N,"total":N}`` ..., then ``{"type":"done","path":...,
"sha256":...}``, or ``{"type":"error","message":...}`` and a non-zero exit. The download itself
(resume, disk check, sha256, atomic move) is `engine.hub.download`. HF_ENDPOINT and HF_TOKEN
are honoured; a token is never taken on the command line (it would show in the process list).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.errors import EngineError
from engine.hub.names import printable as strip_escapes
from engine.hub.search import find_file, list_gguf_files, match_quant


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pull", help="Download a GGUF model from the Hugging Face Hub", description=__doc__
    )
    p.add_argument("repo_id", help="Hub repository, e.g. Qwen/Qwen2.5-0.5B-Instruct-GGUF")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--file", help="exact file name in the repository")
    which.add_argument("--quant", help="quant tag in the file name, e.g. Q4_K_M (any case)")
    p.add_argument("--dest", help="folder to download into (default: Hearth's models folder)")
    p.add_argument("--endpoint", help="Hub endpoint or mirror (default: $HF_ENDPOINT)")
    p.add_argument("--json", action="store_true", help="print one JSON object per line")


def run(args: argparse.Namespace) -> int:
    try:
        path, sha256 = _pull(args)
    except EngineError as exc:
        if not args.json:
            raise  # `python -m engine` prints "error: ..." and exits 2
        _emit({"type": "error", "message": str(exc)})
        return 2
    except KeyboardInterrupt:
        if args.json:
            _emit({"type": "error", "message": "interrupted; the download resumes next time"})
        return 130
    if args.json:
        _emit({"type": "done", "path": str(path), "sha256": sha256})
    else:
        print(f"\n{printable(str(path))}\nsha256 {sha256} verified", file=sys.stderr)
    return 0


def printable(text: str) -> str:
    """Without the terminal escapes a repo listing may carry (issue 22 A15)."""

    return strip_escapes(text)


def _pull(args: argparse.Namespace) -> tuple[Any, str]:
    from engine.hub.download import download

    files = list_gguf_files(args.repo_id, endpoint=args.endpoint)
    chosen = find_file(files, args.file) if args.file else match_quant(files, args.quant)
    report = _json_progress() if args.json else _text_progress(printable(chosen.filename))
    path = download(chosen, dest_dir=args.dest, endpoint=args.endpoint, progress=report)
    # download() verified the file against this hash (or X-Linked-Etag when the listing has
    # none): hash again only in that rare case rather than trust an unlisted value.
    return path, chosen.sha256 or _sha256(path)


def _sha256(path: Any) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _json_progress() -> Any:
    last = {"percent": -1}

    def report(done: int, total: int) -> None:
        percent = done * 100 // total if total else 100
        if percent != last["percent"] or done == total:  # at most ~101 lines per download
            last["percent"] = percent
            _emit({"type": "progress", "downloaded": done, "total": total})

    return report


def _text_progress(name: str, *, terminal: bool | None = None) -> Any:
    """Progress on stderr: one line rewritten in place on a terminal; in a log or pipe, a
    new line every 5% (a redirected ``\r`` line is ~1,500 updates glued together)."""
    live = sys.stderr.isatty() if terminal is None else terminal
    last = {"step": -1}

    def report(done: int, total: int) -> None:
        done = min(done, total) if total else done  # never "16 of 15 MB"
        percent = done * 100 / total if total else 100.0
        text = f"{name}: {done / 1e6:.1f} / {total / 1e6:.1f} MB ({percent:.0f}%)"
        if live:
            print(f"\r{text}", end="", file=sys.stderr, flush=True)
            return
        step = int(percent // 5)
        if step != last["step"]:
            last["step"] = step
            print(text, file=sys.stderr, flush=True)

    return report


def _emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)
