"""llama.cpp's token ids for the tokenizer parity tests, pinned so they run without it.

Owns the vocabulary files the parity cases tokenize (written with gguf-py from seeded
generators, `bench.synth.vocab`: the same bytes on every machine), the fixture
tests/data/llama_cpp_token_ids.json (per case: the file's sha256 and llama.cpp's ids for
every text of `bench.synth.vocab.TEXTS`, BOS added and specials parsed, as
``Llama(vocab_only=True).tokenize`` gives them) and its refresh: ``make llama-cpp-ids`` (needs
llama-cpp-python, ``make llama-cpp-python``) runs this module. Does not own the comparison
(tests/engine/gguf/test_gguf_tokenizer.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.synth.vocab import (
    TEXTS,
    expanded_bpe,
    small_bpe,
    spm_vocab,
    with_specials,
    write_vocab_file,
)
from tests.engine.support.tokenizer_fixture import bundled_gguf

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "llama_cpp_token_ids.json"
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_USER = ["<tool_call>", "</tool_call>", "<think>", "</think>"]


def bpe_file(folder: Path, pre: str | None, arch: str = "qwen2", **extra: Any) -> Path:
    """A 6,000-token byte-level BPE vocabulary with Qwen's specials, pre-tokenizer ``pre``."""
    vocab = with_specials(small_bpe(6000), QWEN_SPECIALS, QWEN_USER)
    vocab.extra.update(extra)
    return write_vocab_file(folder / f"bpe-{arch}-{pre}.gguf", vocab, arch=arch, pre=pre)


def real_size_file(folder: Path) -> Path:
    """~150k tokens and ~150k merges, Qwen-style specials and pre-tokenizer."""
    vocab = with_specials(expanded_bpe(151_643), QWEN_SPECIALS, QWEN_USER)
    vocab.extra["tokenizer.ggml.eos_token_id"] = vocab.tokens.index("<|im_end|>")
    return write_vocab_file(folder / "real-size.gguf", vocab, arch="qwen2", pre="qwen2")


def _bpe(case: str) -> Callable[[Path], Path]:
    # llama-bpe/tekken without add_bos_token: llama.cpp's default adds BOS
    return lambda folder: bpe_file(
        folder, case, "llama" if case in ("llama-bpe", "tekken") else "qwen2"
    )


CASES: dict[str, Callable[[Path], Path]] = {
    "bundled": lambda _folder: bundled_gguf(),
    **{case: _bpe(case) for case in ("qwen2", "qwen35", "gpt-4o", "llama-bpe", "tekken")},
    "spm-llama": lambda folder: write_vocab_file(
        folder / "spm-llama.gguf", spm_vocab(3000), arch="llama"
    ),
    "real-size": real_size_file,
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def llama_cpp_ids(gguf: Path) -> dict[str, list[int]]:
    """llama.cpp's ids for every text (needs llama-cpp-python)."""
    import llama_cpp

    llm = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)
    return {text: llm.tokenize(text.encode("utf-8"), add_bos=True, special=True) for text in TEXTS}


def pinned() -> dict[str, Any]:
    """The fixture: {"llama_cpp": version, "cases": {case: {"sha256", "ids"}}}."""
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def refresh() -> None:
    """Rewrite the fixture from the installed llama-cpp-python."""
    import llama_cpp

    cases: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hearth-llama-ids-") as tmp:
        for case, build in CASES.items():
            gguf = build(Path(tmp))
            cases[case] = {"sha256": digest(gguf), "ids": llama_cpp_ids(gguf)}
    body = {"llama_cpp": llama_cpp.__version__, "cases": cases}
    FIXTURE.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(
        f"{FIXTURE}: {len(cases)} cases from llama-cpp-python {llama_cpp.__version__}\n"
    )


if __name__ == "__main__":
    refresh()
