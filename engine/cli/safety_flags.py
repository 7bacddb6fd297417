"""The safety review's command-line flags, shared by `generate` and `serve`.

Owns the flags (``--guard-model FILE_OR_NAME``, or ``--guard-base-url URL --guard-model NAME``;
``--blocklist FILE``, ``--safety-system-prompt``, ``--guard-strict``, ``--guard-required``,
``--guard-every N``, ``--guard-overlap``) and building a `SafetyReview` from them: a local guard
runs as a second `Engine` (a .gguf path, a model folder, or the name of a file in Hearth's
models folder), a remote one as a `RemoteEngine`. Does not own the review
(`engine.safety.review`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from engine.engine import Engine
from engine.errors import InvalidParamsError, ModelNotFoundError
from engine.hub.library import models_dir
from engine.remote.backend import RemoteEngine
from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard
from engine.safety.reply_review import Pace
from engine.safety.review import SAFETY_SYSTEM_PROMPT, SafetyOptions, SafetyReview


def add_safety_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("safety review (off unless a guard or a blocklist is given)")
    g.add_argument(
        "--guard-model",
        metavar="FILE_OR_NAME",
        help="a Qwen3Guard-Gen model: a .gguf, a model folder, or a file in Hearth's models "
        "folder; with --guard-base-url, the model name the endpoint serves",
    )
    g.add_argument("--guard-base-url", metavar="URL", help="an OpenAI-compatible guard endpoint")
    g.add_argument(
        "--guard-api-key-env", metavar="VAR", help="environment variable with the guard's key"
    )
    g.add_argument(
        "--blocklist", type=Path, metavar="FILE", help="words or re:patterns, one a line"
    )
    g.add_argument(
        "--safety-system-prompt",
        action="store_true",
        help="put a safety system prompt before the conversation",
    )
    g.add_argument("--guard-strict", action="store_true", help="Controversial stops a turn too")
    g.add_argument(
        "--guard-required",
        action="store_true",
        help="stop the turn when the guard cannot answer (default: go on, marked unreviewed)",
    )
    g.add_argument(
        "--guard-overlap",
        action="store_true",
        help="run the guard's checks on their own thread while the reply goes on (faster "
        "with cores to spare; text is still shown only once checked)",
    )
    g.add_argument(
        "--guard-every",
        type=int,
        default=Pace().every_tokens,
        metavar="N",
        help="check a streaming reply at least every N tokens (and at sentence ends)",
    )


def make_review(args: argparse.Namespace) -> SafetyReview | None:
    """The review the flags ask for; None when they ask for none."""
    blocklist = _read_blocklist(args.blocklist)
    if args.guard_base_url and not args.guard_model:
        raise InvalidParamsError("--guard-base-url needs --guard-model NAME (the served model)")
    if not (args.guard_model or blocklist or args.safety_system_prompt):
        return None
    if args.guard_every < 1:
        raise InvalidParamsError(f"--guard-every must be at least 1, got {args.guard_every}")
    options = SafetyOptions(
        strict=args.guard_strict,
        required=args.guard_required,
        system_prompt=SAFETY_SYSTEM_PROMPT if args.safety_system_prompt else "",
        pace=Pace(
            min_tokens=min(Pace().min_tokens, args.guard_every), every_tokens=args.guard_every
        ),
    )
    guard = open_guard(args) if args.guard_model else None
    return SafetyReview(guard, blocklist, options)


def open_guard(args: argparse.Namespace) -> Guard:
    if args.guard_base_url:
        key = os.environ.get(args.guard_api_key_env) if args.guard_api_key_env else None
        if args.guard_api_key_env and not key:
            raise InvalidParamsError(
                f"--guard-api-key-env {args.guard_api_key_env}: that variable is not set"
            )
        backend: Any = RemoteEngine(args.guard_base_url, args.guard_model, key, timeout=60.0)
        return Guard(backend, f"{args.guard_model} at {args.guard_base_url}")
    path = guard_path(args.guard_model)
    return Guard(Engine(str(path)), path.name)


def guard_path(name: str) -> Path:
    """``name`` as a path, or the model file of that name (with or without .gguf, any case)
    in Hearth's models folder."""
    path = Path(name).expanduser()
    if path.exists() or name == "bundled":
        return path
    wanted = name.lower().removesuffix(".gguf")
    folder = models_dir()
    found = sorted(folder.rglob("*.gguf")) if folder.is_dir() else []
    for candidate in found:
        if candidate.stem.lower() == wanted:
            return candidate
    raise ModelNotFoundError(
        f"--guard-model {name}: no such file, and no model of that name in {folder}"
    )


def _read_blocklist(path: Path | None) -> Blocklist:
    if path is None:
        return Blocklist()
    try:
        return Blocklist.parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidParamsError(f"cannot read --blocklist {path}: {exc.strerror}") from None
