"""`python -m engine serve`: the local engine over an OpenAI-compatible HTTP API.

Owns the command line and the foreground lifetime: SIGINT (Ctrl+C) and SIGTERM (a supervisor,
``kill``) both stop it cleanly, even when started with them ignored. The server itself lives in
`engine.serve.server`. Loopback only unless ``--allow-remote`` AND an API key are given; the key may
come from ``--api-key`` or, kept out of the process list, ``--api-key-file PATH`` (its first
line) or the HEARTH_API_KEY variable. The safety flags (`engine.cli.safety_flags`) put every
request through a guard and/or a blocklist and answer ``POST /v1/moderations``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from engine import settings
from engine.cli.safety_flags import add_safety_flags, make_review
from engine.engine import Engine
from engine.errors import InvalidParamsError
from engine.serve.server import check_bind, make_server

DEFAULT_PORT = 8765


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("serve", help="Serve the engine over an OpenAI-compatible HTTP API")
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf file")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.add_argument(
        "--api-key",
        default=None,
        help="require 'Authorization: Bearer KEY' (default: $HEARTH_API_KEY, else no key)",
    )
    p.add_argument(
        "--api-key-file",
        default=None,
        metavar="PATH",
        help="read the key from the first line of PATH (kept out of the process list)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (an API key is then required)",
    )
    p.add_argument("--served-name", default=None, help="model id clients use (default: its name)")
    p.add_argument(
        "--mmproj",
        default=None,
        metavar="FILE",
        help="the model's vision projector (default: an mmproj*.gguf beside a .gguf model)",
    )
    p.add_argument(
        "--allow-image-urls",
        action="store_true",
        help="fetch http(s) image_url parts (at most 20 MB, 10 s a read); default: data: URLs only",
    )
    p.add_argument("--quiet", action="store_true", help="do not log each request")
    add_safety_flags(p)


def api_key_of(args: argparse.Namespace) -> str | None:
    """``--api-key``, else the first line of ``--api-key-file``, else $HEARTH_API_KEY, else
    None. InvalidParamsError for both flags at once, or a file that is missing or empty."""
    from pathlib import Path

    path = getattr(args, "api_key_file", None)
    if path and args.api_key:
        raise InvalidParamsError("give --api-key or --api-key-file, not both")
    if path:
        try:
            lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidParamsError(f"cannot read the API key file {path}: {exc}") from None
        key = lines[0].strip() if lines else ""
        if not key:
            raise InvalidParamsError(f"the API key file {path} is empty")
        return key
    return str(args.api_key or settings.API_KEY.raw() or "") or None


def run(args: argparse.Namespace) -> int:

    api_key = api_key_of(args)
    check_bind(args.host, api_key, args.allow_remote)  # fail before a 30 s model load
    _stop_on_signals()  # before the load: a stop during it must work too
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(message)s",
        stream=sys.stderr,
    )
    review = make_review(args)  # a bad blocklist fails before the model load

    engine = Engine(model=args.model, mmproj=args.mmproj)
    server = make_server(
        engine,
        args.host,
        args.port,
        api_key,
        allow_remote=args.allow_remote,
        model_id=args.served_name,
        review=review,
        allow_image_urls=args.allow_image_urls,
    )
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"serving {server.model_id} at http://{host}:{port}/v1 (Ctrl+C stops)", file=sys.stderr)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        server.worker.stop()
        engine.close()
        if review is not None and review.guard is not None:
            review.guard.close()
    return 0


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, so ``run`` shuts down.

    A process started from a script's background job inherits SIGINT as ignored, and Python
    then keeps it ignored; a parent may leave SIGTERM ignored too (``nohup``-style wrappers).
    Installing both handlers explicitly makes "Ctrl+C stops" and a supervisor's SIGTERM hold.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
