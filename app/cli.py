"""Command-line export and import: ``python -m app export ...`` and ``python -m app import ...``.

Owns parsing those two subcommands and reporting results; `app.__main__` passes their argv
(starting with the subcommand's name) to `main`. No Qt: runs headless, and only reads the
database for export, so it is safe next to a running app (it never touches a reply that app is
streaming). Exit status: 0 done, 1 the work failed (message on stderr), 2 bad usage.

    python -m app export (--all | --conversation ID) [--format markdown|json] --out DIR [--db PATH]
    python -m app import FILE [FILE ...] [--db PATH]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from app.documents.cli import add_docs_parser
from app.portability.export import FORMATS, export_conversations
from app.portability.importer import import_files
from app.portability.portable import ImportFormatError
from app.store import NotFoundError, Store, StoreError
from app.system import paths

COMMANDS = ("export", "import", "docs")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``argv`` (e.g. ``["export", "--all", "--out", "dir"]``); return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(args_list)
    except SystemExit as exc:  # argparse has printed usage or --help
        return int(exc.code or 0)
    try:
        return args.run(args)
    except (StoreError, ImportFormatError, OSError) as exc:
        print(f"hearth {args.command}: error: {exc}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="Hearth conversations")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_export(sub)
    _add_import(sub)
    add_docs_parser(sub)  # python -m app docs ... (app.documents.cli)
    return parser


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write conversations to Markdown or JSON files")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every conversation (not the trash)")
    which.add_argument(
        "--conversation",
        action="append",
        metavar="ID",
        help="a conversation id (or a unique start of one); repeat for more",
    )
    p.add_argument("--format", choices=FORMATS, default="markdown")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write into")
    _add_db(p)
    p.set_defaults(run=run_export)


def _add_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="add conversations from Hearth Markdown/JSON or plain JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    _add_db(p)
    p.set_defaults(run=run_import)


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        type=Path,
        default=None,
        help="conversation database (default: in the user data folder, or $HEARTH_DATA_DIR)",
    )


def run_export(args: argparse.Namespace) -> int:
    db = args.db or paths.database_path()
    if not db.exists():
        raise StoreError(f"no conversation database at {db}")
    with Store(db, recover_interrupted=False) as store:
        if args.all:
            ids = [c.id for c in store.list_conversations()]
        else:
            ids = [resolve_id(store, given) for given in args.conversation]
        for path in export_conversations(store, ids, args.format, args.out):
            print(path)
    return 0


def run_import(args: argparse.Namespace) -> int:
    db = args.db or paths.database_path()
    with Store(db, recover_interrupted=False) as store:
        added = import_files(store, args.files)
        for conversation in added:
            count = len(store.tree(conversation.id))
            print(f"{conversation.id}\t{count} messages\t{conversation.title}")
    return 0


def resolve_id(store: Store, given: str) -> str:
    """``given`` if it is an id, else the one conversation whose id starts with it."""
    try:
        return store.get_conversation(given).id
    except NotFoundError:
        pass
    everything = store.list_conversations() + store.list_conversations(deleted=True)
    matches = [c.id for c in everything if c.id.startswith(given)] if given else []
    if len(matches) == 1:
        return matches[0]
    problem = "matches several conversations" if matches else "matches no conversation"
    raise NotFoundError(f"conversation id {given!r} {problem}")


if __name__ == "__main__":
    sys.exit(main())
