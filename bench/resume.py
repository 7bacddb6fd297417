"""`python -m bench resume`: the next message of a long chat after a restart, with and without
its saved KV cache (`engine.runners.kv_store`), next to the same turn warm in memory.

Each phase runs in its own process, so "after a restart" is a real one: a new process opens
the model and sends the next message of a conversation of about ``--tokens`` tokens.

- warm:    the process that built the chat sends its next message (cache in memory);
- saved:   a new process with saved caches on sends the following message (cache from disk);
- none:    a new process with saved caches off sends the same message (full prefill).

``--determinism-cost`` instead measures what "same answer every time" costs a warm turn: the
fast path reuses only K/V written by runs of >= 2 tokens, so the previous reply (decoded one
token at a time) is prefilled again with the next message. It prints that turn's TTFT next to
the same turn reusing everything (the rule switched off, bench only).

TTFT is the engine's own (request start to first token, prefill included; model load
excluded). The saved cache goes to the normal cache folder under a one-off conversation id
and is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BUDGET = 8 * 2**30
MAX_NEW_TOKENS = 16  # greedy replies; TTFT is what is measured
FOLLOW_UP = ("Summarise that in one sentence.", "Now in five words.")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench resume", description=__doc__)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--tokens", type=int, default=2000, help="chat length (default 2000)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--determinism-cost", action="store_true", help="see the description")
    parser.add_argument("--phase", choices=("build", "next"), help=argparse.SUPPRESS)
    parser.add_argument("--state", help=argparse.SUPPRESS)
    parser.add_argument("--saved", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return _phase(args)
    if args.determinism_cost:
        return _determinism_cost(args)
    with tempfile.TemporaryDirectory(prefix="hearth-resume-") as tmp:
        state = Path(tmp) / "chat.json"
        built = _child(["--phase", "build", "--state", str(state)], args)
        saved = _child(["--phase", "next", "--state", str(state), "--saved"], args)
        none = _child(["--phase", "next", "--state", str(state)], args)
        _forget(args.model, json.loads(state.read_text())["conversation"])
    figures = {
        "model": args.model,
        "chat_tokens": built["prompt_tokens"],
        "warm_ttft_s": built["ttft_s"],
        "warm_cached_tokens": built["cached"],
        "saved_ttft_s": saved["ttft_s"],
        "saved_restored_tokens": saved["restored"],
        "none_ttft_s": none["ttft_s"],
        "saved_vs_warm": saved["ttft_s"] / max(built["ttft_s"], 1e-9),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"next message of a {figures['chat_tokens']:,}-token chat ({args.model}), TTFT:\n"
            f"  warm, in memory          {built['ttft_s']:7.3f} s ({built['cached']:,} cached)\n"
            f"  after a restart, saved   {saved['ttft_s']:7.3f} s "
            f"({saved['restored']:,} restored) = {figures['saved_vs_warm']:.2f}x warm\n"
            f"  after a restart, no save {none['ttft_s']:7.3f} s (full prefill)"
        )
    return 0


def _child(extra: list[str], args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.resume", "--model", args.model]
    cmd += ["--tokens", str(args.tokens), *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ))
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _phase(args: argparse.Namespace) -> int:
    from engine.engine import Engine
    from engine.types import Message

    state = Path(args.state)
    engine = Engine(
        args.model, saved_caches_bytes=BUDGET if args.phase == "build" or args.saved else 0
    )
    try:
        if args.phase == "build":
            conversation = f"bench-resume-{os.getpid()}"
            messages = [Message("user", _long_text(engine, args.tokens))]
            first = _turn(engine, messages, conversation)
            messages += [Message("assistant", first["text"]), Message("user", FOLLOW_UP[0])]
            result = _turn(engine, messages, conversation)  # the warm next message
            messages += [Message("assistant", result["text"]), Message("user", FOLLOW_UP[1])]
            chat = [{"role": m.role, "content": m.content} for m in messages]
            state.write_text(json.dumps({"conversation": conversation, "messages": chat}))
        else:
            saved = json.loads(state.read_text())
            messages = [Message(m["role"], m["content"]) for m in saved["messages"]]
            result = _turn(engine, messages, saved["conversation"])
    finally:
        engine.close()  # saves the live chat's cache (build phase)
    print(json.dumps(result))
    return 0


def _turn(engine: Any, messages: list[Any], conversation: str) -> dict[str, Any]:
    from engine.types import Finished, GenerationRequest, PromptPrepared, SamplingParams

    params = SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS)
    request = GenerationRequest(tuple(messages), params, conversation)
    events = list(engine.generate(request))
    prepared, done = events[0], events[-1]
    assert isinstance(prepared, PromptPrepared) and isinstance(done, Finished)
    return {
        "ttft_s": done.stats.ttft_s,
        "prompt_tokens": done.stats.prompt_tokens,
        "cached": done.stats.cached_prompt_tokens,
        "restored": prepared.restored_prompt_tokens,
        "text": done.text,
    }


def _determinism_cost(args: argparse.Namespace, reply_tokens: int = 128) -> int:
    from engine.engine import Engine
    from engine.runners.onnx_runner import OnnxRunner
    from engine.types import Finished, GenerationRequest, Message, SamplingParams

    engine = Engine(args.model)
    invariant = OnnxRunner.reusable_length
    everything = property(lambda runner: len(runner.cached_ids))
    rows: dict[str, tuple[float, int]] = {}
    try:
        for mode, rule in (("invariant", invariant), ("reuse-all", everything)):
            OnnxRunner.reusable_length = rule  # type: ignore[method-assign, assignment]
            question = (Message("user", "Tell me a long story about a dragon."),)
            reply = SamplingParams(temperature=0.0, max_new_tokens=reply_tokens)
            conv = f"cost-{mode}"
            done = list(engine.generate(GenerationRequest(question, reply, conv)))[-1]
            assert isinstance(done, Finished)
            turn = (*question, Message("assistant", done.text), Message("user", "Shorter."))
            one = SamplingParams(temperature=0.0, max_new_tokens=1)
            last = list(engine.generate(GenerationRequest(turn, one, conv)))[-1]
            assert isinstance(last, Finished)
            rows[mode] = (last.stats.ttft_s, last.stats.cached_prompt_tokens)
    finally:
        OnnxRunner.reusable_length = invariant  # type: ignore[method-assign, assignment]
        engine.close()
    figures: dict[str, float] = {}
    for mode, (ttft, cached) in rows.items():
        figures[f"{mode}_ttft_s"], figures[f"{mode}_cached"] = ttft, cached
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"next turn after a {reply_tokens}-token reply ({args.model}), TTFT:")
        for mode, (ttft, cached) in rows.items():
            print(f"  {mode:<10} {ttft:7.3f} s ({cached:,} prompt tokens cached)")
    return 0


def _long_text(engine: Any, tokens: int) -> str:
    """Real prose (this repository's README) cut to about ``tokens`` tokens."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    ids = engine.tokenize(readme * (1 + tokens // 2000))[: max(16, tokens - 40)]
    return str(engine.tokenizer.decode(ids))


def _forget(model: str, conversation: str) -> None:
    """Delete the one-off saved cache (any key: the phases share one)."""
    from engine.loader import cache_root
    from engine.runners.kv_store import SUFFIX, _digest

    for path in (cache_root() / "conversations").glob(f"{_digest(conversation)[:24]}-*{SUFFIX}"):
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
