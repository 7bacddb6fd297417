"""`python -m bench docs-prefill`: questions about an attached document, the document read once.

The app puts an attached document first in the user message (`app.chat.attachments.
with_documents`), then the question, so every prompt about it starts with the same tokens and
the engine's prefix cache (`engine.kv_cache.reuse_prefix`) skips re-reading it. This measures
TTFT on one engine, one document of about ``--tokens`` tokens (this repository's README, real
prose), greedy replies:

- first:     the first question (the document is read: full prefill);
- second:    a second question in the same chat (document and first turn cached);
- edited:    the first question edited into another one (a new branch: the document, first
             in the message, is still a cached prefix);
- q-first:   the same edit when the question comes *before* the document (the peer layout):
             the prefix differs at the first changed word, so the document is read again.

TTFT is the engine's own (request start to first token, prefill included).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

MAX_NEW_TOKENS = 8
Q1 = "What does this document say about the context window?"
Q2 = "Which command starts the local server?"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench docs-prefill", description=__doc__)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--tokens", type=int, default=2000, help="document length (default 2000)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from app.chat.attachments import Attachment, document_block, with_documents
    from engine.engine import Engine
    from engine.types import Message

    engine = Engine(args.model)
    try:
        doc = [Attachment("README.md", _document(engine, args.tokens))]
        first = _turn(engine, [Message("user", with_documents(Q1, doc))], "docs-a")
        second = _turn(
            engine,
            [Message("user", with_documents(Q1, doc)), Message("assistant", first["text"]),
             Message("user", Q2)],
            "docs-a",
        )  # fmt: skip
        edited = _turn(engine, [Message("user", with_documents(Q2, doc))], "docs-a")
        _turn(engine, [Message("user", f"{Q1}\n\n{document_block(doc)}")], "docs-b")
        q_first = _turn(engine, [Message("user", f"{Q2}\n\n{document_block(doc)}")], "docs-b")
    finally:
        engine.close()
    rows = {"first": first, "second": second, "edited": edited, "q_first_edited": q_first}
    figures: dict[str, Any] = {"model": args.model, "document_tokens": first["prompt_tokens"]}
    for name, r in rows.items():
        figures[f"{name}_ttft_s"] = r["ttft_s"]
        figures[f"{name}_cached_tokens"] = r["cached"]
        figures[f"{name}_prompt_tokens"] = r["prompt_tokens"]
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"questions about a {figures['document_tokens']:,}-token document ({args.model}), TTFT:")
    labels = {
        "first": "first question (reads it)",
        "second": "second question, same chat",
        "edited": "edited question, doc first",
        "q_first_edited": "edited question, q first",
    }
    for name, r in rows.items():
        print(
            f"  {labels[name]:<28} {r['ttft_s']:7.3f} s  "
            f"({r['cached']:,} of {r['prompt_tokens']:,} prompt tokens cached)"
        )
    return 0


def _turn(engine: Any, messages: list[Any], conversation: str) -> dict[str, Any]:
    from engine.types import Finished, GenerationRequest, SamplingParams

    params = SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS)
    events = list(engine.generate(GenerationRequest(tuple(messages), params, conversation)))
    done = events[-1]
    assert isinstance(done, Finished)
    return {
        "ttft_s": done.stats.ttft_s,
        "prompt_tokens": done.stats.prompt_tokens,
        "cached": done.stats.cached_prompt_tokens,
        "text": done.text,
    }


def _document(engine: Any, tokens: int) -> str:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    ids = engine.tokenize(readme * (1 + tokens // 2000))[: max(16, tokens - 40)]
    return str(engine.tokenizer.decode(ids))
