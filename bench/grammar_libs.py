"""`python -m bench grammar --libraries`: the grammar libraries side by side on one schema.

What chose llguidance for `engine.tools.grammar`: each library's one-time tokenizer set-up, its
schema compile, and per token the mask plus applying it to a (V,) logits tensor as this
engine's sampler does, while following one reply's tokens. Run on the bundled 49k vocabulary
and a 151k one (Qwen's own from ``--qwen-tiktoken FILE``, else the bundled one grown to that
size, `bench.synth.vocab.expanded_bpe`). xgrammar and outlines-core are not dependencies:
install them apart (``pip install --target DIR --no-deps xgrammar==0.2.8 outlines-core==0.2.14
apache-tvm-ffi`` and ``PYTHONPATH=DIR``); a library that does not import is reported as such.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "kind": {"enum": ["a", "b", "c"]},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city", "zip"],
        },
    },
    "required": ["name", "age", "tags", "kind", "address"],
}
REPLY = {
    "name": "Alice Smith of the long name",
    "age": 42,
    "tags": ["x", "yy", "zzz", "w"],
    "kind": "b",
    "address": {"city": "Paris", "zip": "75001"},
}
Timing = tuple[float, float, list[float]]  # set-up s, compile s, per-token s


def compare(qwen_tiktoken: Path | None) -> list[dict[str, Any]]:
    """One row per (vocabulary, library)."""
    from bench.synth.vocab import bundled_vocab, expanded_bpe, qwen_tiktoken_vocab

    big = qwen_tiktoken_vocab(qwen_tiktoken) if qwen_tiktoken else expanded_bpe(151_665)
    rows = []
    for label, vocab in (("49k bundled", bundled_vocab()), ("151k", big)):
        tokenizer = _tokenizer(vocab)
        ids = tokenizer.encode(json.dumps(REPLY), add_special_tokens=False)
        for library, run in LIBRARIES.items():
            row: dict[str, Any] = {"vocab": label, "library": library}
            try:
                setup, compile_s, per = run(tokenizer, ids, len(tokenizer))
            except ImportError as exc:
                row["error"] = f"not installed ({exc.name})"
            except Exception as exc:  # a peer failing is a result to print
                row["error"] = f"{type(exc).__name__}: {exc}"[:120]
            else:
                per.sort()
                row.update(
                    setup_ms=round(setup * 1e3),
                    compile_ms=round(compile_s * 1e3, 1),
                    median_us=round(per[len(per) // 2] * 1e6),
                    mean_us=round(sum(per) / len(per) * 1e6),
                )
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "grammar libraries, one JSON schema, one reply's tokens (mask + apply to logits):",
        f"  {'vocab':<12}{'library':<15}{'set-up ms':>10}{'compile ms':>11}"
        f"{'median us':>10}{'mean us':>9}",
    ]
    for r in rows:
        head = f"  {r['vocab']:<12}{r['library']:<15}"
        if "error" in r:
            lines.append(head + r["error"])
            continue
        lines.append(
            head + f"{r['setup_ms']:>10}{r['compile_ms']:>11}{r['median_us']:>10}{r['mean_us']:>9}"
        )
    return "\n".join(lines)


def _tokenizer(vocab: Any) -> Any:
    from bench.synth.vocab import write_vocab_file
    from engine.gguf import reader as gguf_reader
    from engine.gguf.tokenizer import tokenizer_files
    from engine.loader import _load_built_tokenizer

    folder = Path(tempfile.mkdtemp(prefix="grammar-libs-"))
    gguf = write_vocab_file(folder / "vocab.gguf", vocab, arch="llama")
    body, config = tokenizer_files(gguf_reader.open_gguf(gguf).metadata)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return _load_built_tokenizer(folder)


def _llguidance(tokenizer: Any, ids: list[int], n: int) -> Timing:
    import llguidance
    import llguidance.hf

    t0 = time.perf_counter()
    ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=n)
    t1 = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_json_schema(SCHEMA)
    matcher = llguidance.LLMatcher(ll_tokenizer, grammar, log_level=0)
    t2 = time.perf_counter()
    logits, per = torch.randn(n), []
    for token in ids:
        start = time.perf_counter()
        bits = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
        allowed = torch.from_numpy(np.unpackbits(bits, bitorder="little")[:n].astype(bool))
        logits.masked_fill(~allowed, float("-inf"))
        per.append(time.perf_counter() - start)
        matcher.consume_token(token)
    return t1 - t0, t2 - t1, per


def _xgrammar(tokenizer: Any, ids: list[int], n: int) -> Timing:
    import xgrammar

    t0 = time.perf_counter()
    compiler = xgrammar.GrammarCompiler(
        xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=n)
    )
    t1 = time.perf_counter()
    matcher = xgrammar.GrammarMatcher(compiler.compile_json_schema(json.dumps(SCHEMA)))
    t2 = time.perf_counter()
    bitmask = xgrammar.allocate_token_bitmask(1, n)
    logits, per = torch.randn(n), []
    for token in ids:
        start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        xgrammar.apply_token_bitmask_inplace(logits, bitmask)
        per.append(time.perf_counter() - start)
        matcher.accept_token(token)
    return t1 - t0, t2 - t1, per


def _outlines_core(tokenizer: Any, ids: list[int], n: int) -> Timing:
    from outlines_core import Guide, Index, Vocabulary
    from outlines_core.json_schema import build_regex_from_schema

    from bench.synth.vocab import _byte_spelling

    unspell = {v: k for k, v in _byte_spelling().items()}
    t0 = time.perf_counter()
    pieces: dict[str, list[int]] = {}
    for token_id, token in enumerate(tokenizer.convert_ids_to_tokens(list(range(n)))):
        if token is None or token_id in tokenizer.all_special_ids:
            continue
        try:  # byte-level spelling back to the text the token stands for
            pieces.setdefault(bytes(unspell[c] for c in token).decode(), []).append(token_id)
        except (KeyError, UnicodeDecodeError):
            continue
    vocabulary = Vocabulary(tokenizer.eos_token_id, pieces)
    t1 = time.perf_counter()
    guide = Guide(Index(build_regex_from_schema(json.dumps(SCHEMA)), vocabulary))
    t2 = time.perf_counter()
    logits, per = torch.randn(n), []
    for token in ids:
        start = time.perf_counter()
        allowed = torch.zeros(n, dtype=torch.bool)
        allowed[torch.tensor(guide.get_tokens())] = True
        logits.masked_fill(~allowed, float("-inf"))
        per.append(time.perf_counter() - start)
        guide.advance(token)
    return t1 - t0, t2 - t1, per


LIBRARIES: dict[str, Callable[[Any, list[int], int], Timing]] = {
    "llguidance": _llguidance,
    "xgrammar": _xgrammar,
    "outlines-core": _outlines_core,
}
