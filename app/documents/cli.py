"""``python -m app docs ...``: index folders into collections and search them from a shell.

Owns the ``docs`` subcommands and their output (text for people, ``--json`` for scripts):

    python -m app docs add FOLDER_OR_FILE --collection NAME [--embed-model GGUF] [--json]
    python -m app docs search NAME "QUERY" [--top N] [--mode hybrid|keyword|dense] [--json]
    python -m app docs list [--json]
    python -m app docs rescan NAME [--json]
    python -m app docs remove NAME

A collection remembers the embedding model it was indexed with, so ``search`` loads the same
one (through `app.bridge`); without one, search is keyword-only. Exit status: 0 done, 1 the work
failed (one-line message on stderr), 2 bad usage. Does not own indexing (`app.documents.index`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.documents import (
    DocumentError,
    DocumentIndex,
    Hit,
    IndexProgress,
    IndexReport,
    documents_path,
)
from app.documents.languages import shares_text


def add_docs_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``docs`` and its subcommands on the app's command-line parser."""
    docs = sub.add_parser("docs", help="index documents into collections and search them")
    inner = docs.add_subparsers(dest="docs_command", required=True)
    p = inner.add_parser("add", help="index a folder or file into a collection")
    p.add_argument("path", type=Path, metavar="FOLDER_OR_FILE")
    p.add_argument("--collection", required=True, metavar="NAME")
    p.add_argument("--embed-model", metavar="GGUF", help="embedding model (.gguf) for dense search")
    _common(p)
    p.set_defaults(run=_guarded(run_add))
    p = inner.add_parser("search", help="print the best chunks of a collection for a query")
    p.add_argument("collection", metavar="NAME")
    p.add_argument("query")
    p.add_argument("--top", type=int, default=5, metavar="N")
    p.add_argument("--mode", choices=("hybrid", "keyword", "dense"), default="hybrid")
    _common(p)
    p.set_defaults(run=_guarded(run_search))
    p = inner.add_parser("list", help="collections and their files")
    _common(p)
    p.set_defaults(run=_guarded(run_list))
    p = inner.add_parser("rescan", help="re-index what changed in a collection's folders")
    p.add_argument("collection", metavar="NAME")
    _common(p)
    p.set_defaults(run=_guarded(run_rescan))
    p = inner.add_parser("remove", help="forget a collection (the files stay on disk)")
    p.add_argument("collection", metavar="NAME")
    _common(p)
    p.set_defaults(run=_guarded(run_remove))


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument(
        "--index",
        type=Path,
        default=None,
        help="index file (default: documents.sqlite3 in the data folder)",
    )


def _guarded(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``run`` with a DocumentError turned into a one-line message and exit status 1."""

    def guarded(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except DocumentError as exc:
            print(f"hearth docs {args.docs_command}: error: {exc}", file=sys.stderr)
            return 1

    return guarded


def _open(
    args: argparse.Namespace, collection: str | None = None, embed_model: str | None = None
) -> DocumentIndex:
    path = args.index or documents_path()
    index = DocumentIndex(path)
    model = embed_model or (index.embed_model(collection) if collection else None)
    if model:
        from app.bridge import open_embedder

        index.embedder = open_embedder(model)
    return index


def run_add(args: argparse.Namespace) -> int:
    index = _open(args, embed_model=args.embed_model)
    try:
        report = index.add(args.collection, args.path, progress=_progress_printer(args.json))
        if args.embed_model:
            index.set_embed_model(args.collection, args.embed_model)
    finally:
        index.close()
    _print_report(args, report)
    return 0


def run_rescan(args: argparse.Namespace) -> int:
    index = _open(args, collection=args.collection)
    try:
        report = index.rescan(args.collection, progress=_progress_printer(args.json))
    finally:
        index.close()
    _print_report(args, report)
    return 0


def _progress_printer(as_json: bool) -> Any:
    def show(p: IndexProgress) -> None:
        if as_json:
            line = json.dumps({"progress": {"done": p.done, "total": p.total, "file": p.file}})
            print(line, file=sys.stderr)
        elif p.file:
            print(f"[{p.done + 1}/{p.total}] {p.file}", file=sys.stderr)

    return show


def _print_report(args: argparse.Namespace, report: IndexReport) -> None:
    if args.json:
        print(json.dumps(asdict(report), ensure_ascii=False))
        return
    print(summary(report))
    for _file, message in report.skipped:
        print(f"skipped: {message}")
    for _file, message in report.failed:
        print(f"failed: {message}")


def _count(n: int, noun: str) -> str:
    """The count with its noun: 1 chunk, 3 chunks (the CLI speaks English; the GUI translates)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary(report: IndexReport) -> str:
    """One line: "5 added, 0 updated, 2 unchanged, 0 removed, 1 skipped, 0 failed, 40 chunks"."""
    line = (
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed, {len(report.skipped)} skipped, {len(report.failed)} failed, "
        f"{_count(report.chunks, 'chunk')}"
    )
    return line + (" (stopped early)" if report.cancelled else "")


def run_search(args: argparse.Namespace) -> int:
    index = _open(args, collection=args.collection)
    try:
        hits = index.search([args.collection], args.query, top_k=args.top, mode=args.mode)
    finally:
        index.close()
    if args.json:
        rows = [
            {
                "file": h.file,
                "locator": h.locator,
                "text": h.text,
                "score": round(h.score, 6),
                "bm25": None if h.bm25 is None else round(h.bm25, 4),
                "cosine": None if h.cosine is None else round(h.cosine, 4),
            }
            for h in hits
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    for rank, h in enumerate(hits, start=1):
        where = f"{h.file}" + (f" ({h.locator})" if h.locator else "")
        print(f"{rank}. {where}  {score_line(h)}\n   {' '.join(h.text.split())[:300]}")
    return 0


def score_line(hit: Hit) -> str:
    """ "score 0.03252 (bm25 4.21, cosine 0.612)": the fused rank score orders the hits (first
    in one ranking is always 1/61 = 0.0164), the components say how well each matched."""
    parts = [f"bm25 {hit.bm25:.3f}" if hit.bm25 is not None else ""]
    parts.append(f"cosine {hit.cosine:.3f}" if hit.cosine is not None else "")
    detail = ", ".join(p for p in parts if p)
    return f"score {hit.score:.5f}" + (f" ({detail})" if detail else "")


def run_list(args: argparse.Namespace) -> int:
    index = _open(args)
    try:
        infos = index.collections()
        files = {c.name: index.files(c.name) for c in infos}
        models = {c.name: index.embed_model(c.name) for c in infos}
    finally:
        index.close()
    if args.json:
        rows = [
            {
                **asdict(c),
                "embed_model": models[c.name],
                "documents": [asdict(f) for f in files[c.name]],
            }
            for c in infos
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    for c in infos:
        print(
            f"{c.name}\t{_count(c.files, 'file')}\t{_count(c.chunks, 'chunk')}\t{c.skipped} skipped"
            f"\t{c.failed} failed\t{c.missing} missing"
            + (f"\t{shares_text(c.languages)}" if c.languages else "")
        )
        for f in files[c.name]:
            if f.status != "ok":
                print(f"\t{f.status}: {f.path}: {f.error}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    index = _open(args)
    try:
        removed = index.remove(args.collection)
    finally:
        index.close()
    if not removed:
        raise DocumentError(f"no collection named {args.collection!r}")
    if not args.json:
        print(f"removed {args.collection}")
    return 0
