"""`python -m engine pull REPO_ID (--file NAME | --quant TAG) [--no-mmproj]`: download a GGUF.

Owns only flags and printing. A model whose repo has a vision projector (an ``mmproj*`` file)
comes with it, saved beside the model (`engine.hub.projectors`; ``--no-mmproj`` skips it).
With ``--json`` every line is one JSON object: ``{"type":"progress","downloaded":N,
"total":N}`` ... (over both files), then ``{"type":"done","path":...,"sha256":...,
"mmproj":PATH_OR_NULL,"mmproj_sha256":...}``, or ``{"type":"error","message":...}`` and a
non-zero exit. The download itself (resume, disk check, sha256, atomic move) is
`engine.hub.download`. HF_ENDPOINT and HF_TOKEN
are honoured; a token is never taken on the command line (it would show in the process list).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.errors import EngineError
from engine.hub.names import printable as strip_escapes
from engine.hub.projectors import download_with_projector, projector_of
from engine.hub.search import find_file, list_repo_ggufs, match_quant


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
    p.add_argument(
        "--no-mmproj",
        action="store_true",
        help="do not download the repo's vision projector (mmproj) with the model",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per line")


def run(args: argparse.Namespace) -> int:
    try:
        pulled = _pull(args)
    except EngineError as exc:
        if not args.json:
            raise  # `python -m engine` prints "error: ..." and exits 2
        _emit({"type": "error", "message": str(exc)})
        return 2
    except KeyboardInterrupt:
        if args.json:
            _emit({"type": "error", "message": "interrupted; the download resumes next time"})
        return 130
    (path, sha256), projector = pulled
    if args.json:
        done: dict[str, Any] = {"type": "done", "path": str(path), "sha256": sha256}
        done["mmproj"] = str(projector[0]) if projector else None
        done["mmproj_sha256"] = projector[1] if projector else None
        _emit(done)
        return 0
    print(f"\n{printable(str(path))}\nsha256 {sha256} verified", file=sys.stderr)
    if projector:
        print(
            f"vision projector {printable(str(projector[0]))}\nsha256 {projector[1]} verified",
            file=sys.stderr,
        )
    return 0


def printable(text: str) -> str:
    """Without the terminal escapes a repo listing may carry (issue 22 A15)."""

    return strip_escapes(text)


def _pull(args: argparse.Namespace) -> tuple[tuple[Any, str], tuple[Any, str] | None]:
    """((model path, sha256), (projector path, sha256) or None)."""
    listing = list_repo_ggufs(args.repo_id, endpoint=args.endpoint)
    files = listing.models + listing.projectors if args.file else listing.models
    chosen = find_file(files, args.file) if args.file else match_quant(files, args.quant)
    projector = None
    if not args.no_mmproj and chosen not in listing.projectors:
        projector = projector_of(listing)
    names = chosen.filename + (f" + {projector.filename}" if projector else "")
    report = _json_progress() if args.json else _text_progress(printable(names))
    path, projector_path = download_with_projector(
        chosen, projector, dest_dir=args.dest, endpoint=args.endpoint, progress=report
    )
    # download() verified each file against its listed hash (or X-Linked-Etag when the
    # listing has none): hash again only in that rare case rather than trust an unlisted value.
    pulled = (path, chosen.sha256 or _sha256(path))
    if projector is None or projector_path is None:
        return pulled, None
    return pulled, (projector_path, projector.sha256 or _sha256(projector_path))


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
