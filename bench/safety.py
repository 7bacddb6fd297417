"""`python -m bench safety`: what the safety review costs a reply, with and without the guard.

Runs the same greedy reply of the chat model (default: the bundled model) without a review,
then with the guard reviewing the question and the reply as it streams (`engine.safety`),
and prints the reply's wall time for each and their ratio, with the number of guard checks.
The guard defaults to a random-weight GGUF of Qwen3Guard-Gen-0.6B's shape (Qwen3-0.6B: 28
layers, hidden 1024, a 151,936-token vocabulary; Q8_0, as the 0.6B GGUFs people download),
written once into the cache by `bench.synth`; ``--guard FILE`` uses a real file instead.

A random guard answers noise, not "Safety: Safe", so the bench counts an answer without a
verdict as Safe and caps each answer at the tokens a real safe answer takes (`SAFE_ANSWER`,
"Safety: Safe\\n" and the stop), so every check costs what a real guard's would.
Figures depend on the load of the machine: run it twice, and say what else was running.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from engine.cache_folders import cache_root
from engine.engine import Engine
from engine.errors import GuardUnavailableError
from engine.safety.guard import Guard
from engine.safety.reply_review import Pace
from engine.safety.review import SafetyOptions, SafetyReview
from engine.types import (
    Finished,
    GenerationRequest,
    Message,
    SafetyVerdict,
    SamplingParams,
    TextDelta,
)

QUESTION = "Write a short story about a lighthouse keeper who finds a message in a bottle."
SAFE_ANSWER = 5  # "Safety", ":", " Safe", "\n" and the stop, in Qwen's vocabulary


class CountingGuard(Guard):
    """A guard whose answer without a verdict counts as Safe (a random model's), and that
    counts its checks."""

    checks = 0

    def check(self, user: str, reply: str | None = None) -> SafetyVerdict:
        self.checks += 1
        try:
            return super().check(user, reply)
        except GuardUnavailableError:
            return SafetyVerdict("Safe", stage="prompt" if reply is None else "reply")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench safety", description=__doc__)
    parser.add_argument("--model", default="bundled", help="the chat model")
    parser.add_argument("--guard", type=Path, help="a guard GGUF (default: a random 0.6B)")
    parser.add_argument("--tokens", type=int, default=128, help="reply length (default 128)")
    parser.add_argument("--every", type=int, default=Pace().every_tokens)
    parser.add_argument("--min", type=int, default=Pace().min_tokens)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--overlap", action="store_true", help="guard checks on their own thread")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    guard_file = args.guard or random_guard()
    chat = Engine(args.model)
    guard = CountingGuard(Engine(str(guard_file)), guard_file.name, answer_tokens=SAFE_ANSWER)
    request = GenerationRequest(
        (Message("user", QUESTION),),
        SamplingParams(temperature=0.0, max_new_tokens=args.tokens, seed=0),
    )
    options = SafetyOptions(pace=Pace(args.min, args.every), overlap=args.overlap)
    review = SafetyReview(guard, options=options)
    rows: dict[str, list[float]] = {"without": [], "with": []}
    tokens = 0
    for _ in range(args.runs):  # interleaved, so a change in load touches both
        seconds, tokens = timed(lambda r: chat.generate(r), request)
        rows["without"].append(seconds)
        guard.checks = 0
        seconds, _ = timed(lambda r: review.review(r, chat.generate), request)
        rows["with"].append(seconds)
    best = {k: min(v) for k, v in rows.items()}
    figures: dict[str, Any] = {
        "model": args.model,
        "guard": guard_file.name,
        "reply_tokens": tokens,
        "pace": [args.min, args.every],
        "overlap": args.overlap,
        "guard_checks": guard.checks,
        "without_s": best["without"],
        "with_s": best["with"],
        "ratio": best["with"] / best["without"],
        "runs": rows,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{tokens}-token reply of {args.model}, best of {args.runs}:\n"
            f"  without the guard {best['without']:7.2f} s\n"
            f"  with {guard_file.name} ({guard.checks} checks, every {args.every} tokens or "
            f"a sentence end after {args.min}) {best['with']:7.2f} s = {figures['ratio']:.2f}x"
        )
    chat.close()
    review.close()
    return 0


def timed(generate: Any, request: GenerationRequest) -> tuple[float, int]:
    start = time.perf_counter()
    tokens = 0
    for event in generate(request):
        if isinstance(event, TextDelta):
            tokens = event.token_index
        elif isinstance(event, Finished):
            tokens = event.stats.completion_tokens or tokens
    return time.perf_counter() - start, tokens


def random_guard() -> Path:
    """A random-weight Q8_0 GGUF of Qwen3Guard-Gen-0.6B's shape, written once (~0.8 GB)."""
    path = cache_root() / "bench" / "qwen3guard-0.6b-shape-Q8_0.gguf"
    if not path.exists():
        from bench.synth.core import write_real_size_model

        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        write_real_size_model(partial, "qwen3", "Q8_0")
        partial.rename(path)
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
