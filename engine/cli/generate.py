"""`python -m engine generate`: one reply from a local model or an OpenAI-compatible endpoint.

Owns the command line of generation: flags -> `GenerationRequest`, the backend (local
`Engine`, or `RemoteEngine` with ``--base-url``), and printing — plain text streamed to stdout
(thinking sent apart, such as gpt-oss's, to stderr), or with ``--json`` one JSON object per
line ({"type":"delta"} and {"type":"reasoning"} ... then {"type":"done"}).
Ctrl-C cancels the generation cleanly (the partial reply is reported as cancelled).
With a guard or a blocklist (`engine.cli.safety_flags`) the reply is reviewed as it streams;
a flag ends it with finish reason content_filter, said on stderr and in the done record.
Bad flags or bad input: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.cli.safety_flags import add_safety_flags, make_review
from engine.engine import Engine
from engine.errors import InvalidParamsError
from engine.models import resolve_model
from engine.safety.review import ReviewedBackend
from engine.types import (
    PARAMS,
    Event,
    Finished,
    GenerationRequest,
    ImageRef,
    Message,
    ReasoningDelta,
    SamplingParams,
    TextDelta,
)

DTYPES = ("auto", "float32", "float16", "bfloat16")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("generate", help="Generate a reply", description=__doc__)
    p.add_argument("--model", default="bundled", help="'bundled', a model folder or a .gguf")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="the user message")
    src.add_argument("--messages", type=Path, help='JSON file: [{"role":..,"content":..}, ...]')
    p.add_argument("--system", help="system prompt (prepended)")
    add_image_flags(p)
    add_sampling_flags(p)
    p.add_argument("--dtype", choices=DTYPES, default="auto")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda:N")
    p.add_argument("--backend", default="auto", help="auto, torch or onnx (local models)")
    p.add_argument("--context-window", type=int, default=None)
    p.add_argument(
        "--speculative",
        action="store_true",
        help="prompt-lookup speculative decoding (the same tokens, greedy or seeded; faster on "
        "rewrite/summarise prompts, stops itself where drafts do not pay)",
    )
    p.add_argument("--json", action="store_true", help="JSON lines instead of plain text")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint instead of a local model")
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="name of the environment variable holding the endpoint's API key; without it no "
        "key is sent (never defaults to OPENAI_API_KEY: that key must not reach any --base-url)",
    )
    add_safety_flags(p)


def add_image_flags(p: argparse.ArgumentParser) -> None:
    """--mmproj, --image (repeatable), --image-budget: a picture with the (last) user message."""
    p.add_argument(
        "--mmproj",
        type=Path,
        default=None,
        help="the model's vision projector (default: an mmproj*.gguf beside a .gguf model)",
    )
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="an image for the user message (repeat for more)",
    )
    p.add_argument(
        "--image-budget",
        type=int,
        default=None,
        metavar="N",
        help="image tokens per image where the projector offers a choice (Gemma 4: 70, 140, "
        "280, 560, 1120)",
    )


def image_refs(args: argparse.Namespace) -> tuple[ImageRef, ...]:
    """The --image files as `ImageRef`s (a missing file is refused before the model loads)."""
    names = getattr(args, "image", None) or []  # parsers without the image flags
    for name in names:
        if not Path(name).is_file():
            raise InvalidParamsError(f"--image {name}: no such file")
    budget = getattr(args, "image_budget", None)
    return tuple(ImageRef(str(Path(name).resolve()), budget=budget) for name in names)


def add_sampling_flags(p: argparse.ArgumentParser) -> None:
    """One flag per `engine.params` row that has one, defaulting to the app's defaults."""
    defaults = SamplingParams()
    for param in PARAMS:
        if param.cli is None:
            continue
        default = getattr(defaults, param.name)
        text = f"{param.help} (default: {default})"
        if param.kind == "strings":
            p.add_argument(param.cli, dest=param.name, action="append", default=[], help=text)
        else:
            kind = float if param.kind == "float" else int
            p.add_argument(param.cli, dest=param.name, type=kind, default=default, help=text)


def build_request(args: argparse.Namespace) -> GenerationRequest:
    """Flags -> a validated request (InvalidParamsError names the bad flag's value)."""
    values = {p.name: getattr(args, p.name) for p in PARAMS if p.cli is not None}
    params = SamplingParams(**{**values, "stop": tuple(args.stop)})
    messages = [Message("system", args.system)] if args.system else []
    if args.messages is not None:
        messages += _read_messages(args.messages)
    else:
        messages.append(Message("user", args.prompt))
    images = image_refs(args)
    if images:  # with the last user message
        last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
        if last is None:
            raise InvalidParamsError("--image needs a user message to go with")
        messages[last] = dataclasses.replace(messages[last], images=images)
    return GenerationRequest(tuple(messages), params)


def _read_messages(path: Path) -> list[Message]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidParamsError(f"cannot read --messages {path}: {exc}") from None
    if not isinstance(data, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in data
    ):
        raise InvalidParamsError(
            f'--messages {path} must be a JSON list of {{"role": ..., "content": ...}} objects'
        )
    return [Message(str(m["role"]), m["content"]) for m in data]


def make_backend(args: argparse.Namespace) -> Any:
    if args.base_url:
        from engine.remote.backend import RemoteEngine

        # Only a variable the user named: a default would leak e.g. OPENAI_API_KEY to any host.
        key = _api_key(args.api_key_env)
        return RemoteEngine(base_url=args.base_url, model=args.model, api_key=key)

    resolve_model(args.model)  # a bad path fails in a second, before torch is imported

    return Engine(
        args.model,
        dtype=args.dtype,
        device=args.device,
        backend=args.backend,
        context_window=args.context_window,
        speculative=args.speculative,
        mmproj=args.mmproj,
    )


def _api_key(variable: str | None) -> str | None:
    """The key from the environment variable the user named, or None when none was named.

    Only a named variable is read: a default (say OPENAI_API_KEY) would send that key to
    whatever --base-url is given. A named but unset variable is an error, not a silent no-key.
    """
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise InvalidParamsError(f"--api-key-env {variable}: that environment variable is not set")
    return key


def run(args: argparse.Namespace) -> int:
    request = build_request(args)  # validate flags before the slow model load
    review = make_review(args)
    backend = make_backend(args)
    engine = backend
    if review is not None:
        backend = ReviewedBackend(backend, review)
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())  # Ctrl-C: cancel cleanly
    try:
        finished = _print_events(
            backend.generate(request, cancel), as_json=args.json, engine=engine
        )
    finally:
        signal.signal(signal.SIGINT, previous)
        backend.close()
    if finished is not None and finished.reason == "cancelled":
        return 130  # the conventional status after Ctrl-C
    return 1 if finished is None or finished.reason == "error" else 0


def _print_events(events: Iterator[Event], *, as_json: bool, engine: Any = None) -> Finished | None:
    out = sys.stdout
    finished = None
    for event in events:
        if isinstance(event, TextDelta):
            out.write(
                json.dumps({"type": "delta", "text": event.text}) + "\n" if as_json else event.text
            )
            out.flush()
        elif isinstance(event, ReasoningDelta):  # gpt-oss's analysis channel: kept off stdout
            if as_json:
                out.write(json.dumps({"type": "reasoning", "text": event.text}) + "\n")
            else:
                sys.stderr.write(event.text)
        elif isinstance(event, Finished):
            finished = event
    if finished is None:
        return None
    if as_json:
        out.write(json.dumps(_done_record(finished, getattr(engine, "last_images", None))) + "\n")
    elif finished.text and not finished.text.endswith("\n"):
        out.write("\n")
    out.flush()
    if finished.error:
        print(f"error: {finished.error}", file=sys.stderr)
    _say_safety(finished)
    return finished


def _say_safety(finished: Finished) -> None:
    verdict = finished.safety
    if verdict is None:
        return
    if finished.reason == "content_filter":
        named = ", ".join(verdict.categories) or verdict.safety
        where = "question" if verdict.stage == "prompt" else "reply"
        print(f"safety: the {where} was stopped ({verdict.safety}: {named})", file=sys.stderr)
    elif verdict.safety == "Unreviewed" and not finished.error:
        print(f"safety: not reviewed by the guard: {verdict.error}", file=sys.stderr)


def _done_record(f: Finished, images: Any = None) -> dict[str, object]:
    """The JSON done record; ``images``: the engine's `engine.image_input.ImageReport`."""
    return {
        "type": "done",
        "finish_reason": str(f.reason),
        "text": f.text,
        "token_ids": list(f.token_ids),
        "prompt_tokens": f.stats.prompt_tokens,
        "cached_prompt_tokens": f.stats.cached_prompt_tokens,
        "completion_tokens": f.stats.completion_tokens,
        "ttft_s": round(f.stats.ttft_s, 6),
        "decode_tokens_per_s": round(f.stats.decode_tokens_per_s, 3),
        "prefill_tokens_per_s": round(f.stats.prefill_tokens_per_s, 3),
        "total_s": round(f.stats.total_s, 6),
        "dropped_messages": f.stats.dropped_messages,
        "error": f.error,
        # The safety review's verdict (Safe/Unsafe/Controversial/Unreviewed, its categories,
        # the stage it judged); null when no review ran.
        "safety": f.safety.to_dict() if f.safety is not None else None,
        # Images: their tokens in the prompt and the encode's seconds (0 on a cache hit).
        "image_tokens": images.tokens if images is not None else 0,
        "image_encode_s": round(images.encode_s, 6) if images is not None else 0.0,
    }
