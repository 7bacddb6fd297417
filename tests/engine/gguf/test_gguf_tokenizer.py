"""The tokenizer built from a GGUF's metadata (`engine.gguf.tokenizer`) tokenizes as before.

References: transformers' own GGUF conversion (what the header cache used until format 3) and
llama.cpp's ``vocab_only`` tokenizer, whose ids are pinned in tests/data/llama_cpp_token_ids.json
(`tests.engine.support.llama_cpp_ids`; ``make llama-cpp-ids`` refreshes them) and compared
live too where llama-cpp-python is installed. Files: the bundled
SmolLM2 model, vocabulary-only GGUFs written with gguf-py (`bench.synth.vocab`) for each
pre-tokenizer and SentencePiece flavour, and a real-size one (~150k tokens and merges, as
Qwen's) that a first open must read in one pass, never through gguf-py's reader or
transformers' GGUF readers.

Where the two references differ, llama.cpp is followed and the comparison with transformers
leaves those inputs out: SentencePiece text that starts with a space (or "▁") or follows a
special token (the dummy prefix), and BOS for llama3-style vocabularies whose file does not say.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from bench.synth.vocab import (
    TEXTS,
    Vocab,
    gemma_vocab,
    spm_vocab,
    write_vocab_file,
)
from engine.gguf import reader as gguf_reader
from engine.gguf.tokenizer import spm_merges, tokenizer_files
from tests.engine.support.llama_cpp_ids import (
    CASES,
    bpe_file,
    digest,
    llama_cpp_ids,
    pinned,
    real_size_file,
)
from tests.engine.support.tokenizer_fixture import bundled_gguf, smollm2_tokenizer

HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 你好"}]


def ours(gguf: Path, folder: Path) -> Any:
    """Our tokenizer for ``gguf``, loaded as the engine loads a header cache."""
    from engine.loader import _load_built_tokenizer

    body, config = tokenizer_files(gguf_reader.open_gguf(gguf).metadata)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return _load_built_tokenizer(folder)


def transformers_reading(gguf: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def assert_same(reference: Any, mine: Any, texts: tuple[str, ...] | list[str] = TEXTS) -> None:
    for text in texts:
        ids = reference.encode(text)
        assert mine.encode(text) == ids, text
        for skip in (False, True):
            assert mine.decode(ids, skip_special_tokens=skip) == reference.decode(
                ids, skip_special_tokens=skip
            ), text
    assert mine.get_vocab() == reference.get_vocab()
    assert sorted(mine.all_special_ids) == sorted(reference.all_special_ids)
    for name in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        assert getattr(mine, name) == getattr(reference, name), name
    if reference.chat_template:
        rendered = reference.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
        assert mine.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True) == (
            rendered
        )


def plain(texts: tuple[str, ...]) -> list[str]:
    """Texts with no leading whitespace (nor "▁") and no special-token look-alikes (see the
    module docstring)."""
    return [t for t in texts if t and not t[0].isspace() and t[0] != "▁" and "<" not in t]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vocab")


def test_bundled_model_tokenizes_as_transformers_read_it(tmp_path: Path) -> None:
    assert_same(smollm2_tokenizer(), ours(bundled_gguf(), tmp_path / "tok"))


@pytest.mark.parametrize(
    ("pre", "arch", "extra"),
    [
        ("qwen2", "qwen2", {}),
        ("qwen35", "qwen2", {}),
        ("gpt-4o", "llama", {}),
        ("llama-bpe", "llama", {"tokenizer.ggml.add_bos_token": True}),
        ("tekken", "llama", {"tokenizer.ggml.add_bos_token": False}),
        (None, "llama", {}),
    ],
)
def test_byte_level_vocabularies_tokenize_as_transformers_read_them(
    vocab_dir: Path, tmp_path: Path, pre: str | None, arch: str, extra: dict[str, Any]
) -> None:
    gguf = bpe_file(vocab_dir, pre, arch, **extra)
    assert_same(transformers_reading(gguf), ours(gguf, tmp_path / "tok"))


def _spm_file(folder: Path, arch: str, vocab: Vocab, name: str = "") -> Path:
    return write_vocab_file(folder / f"spm-{arch}{name}.gguf", vocab, arch=arch)


def test_sentencepiece_vocabularies_tokenize_as_transformers_read_them(
    vocab_dir: Path, tmp_path: Path
) -> None:
    llama = _spm_file(vocab_dir, "llama", spm_vocab(3000))
    assert_same(transformers_reading(llama), ours(llama, tmp_path / "llama"), plain(TEXTS))
    phi3 = _spm_file(vocab_dir, "phi3", spm_vocab(3000))  # the same dummy prefix as llama.cpp
    assert_same(transformers_reading(phi3), ours(phi3, tmp_path / "phi3"))
    gemma = _spm_file(vocab_dir, "gemma3", gemma_vocab(3000))  # spaces re-spelled, position order
    assert_same(transformers_reading(gemma), ours(gemma, tmp_path / "gemma"))


def test_gemma4_vocabulary_with_merges_tokenizes_as_transformers_reads_it(
    vocab_dir: Path, tmp_path: Path
) -> None:
    vocab = gemma_vocab(3000)
    vocab.model = "gemma4"
    vocab.scores = [-float(i) for i in range(len(vocab.tokens))]
    index = {t: i for i, t in enumerate(vocab.tokens)}
    vocab.merges = [" ".join(m) for m in spm_merges(vocab.tokens, vocab.scores, index)]
    gguf = _spm_file(vocab_dir, "gemma3", vocab, "-gemma4")
    mine = ours(gguf, tmp_path / "tok")
    assert_same(transformers_reading(gguf), mine)
    assert mine.encode("hi")[0] != mine.bos_token_id, "its chat template writes <bos> itself"


def test_spm_merges_rank_by_score_then_piece_lengths() -> None:
    tokens = ["a", "b", "c", "ab", "bc", "abc"]
    scores = [0.0, 0.0, 0.0, -1.0, -2.0, -0.5]
    merges = spm_merges(tokens, scores, {t: i for i, t in enumerate(tokens)})
    # abc (score -0.5) first: its two cuts, the longer left part first; then ab, then bc
    assert merges == [["ab", "c"], ["a", "bc"], ["a", "b"], ["b", "c"]]


@pytest.mark.parametrize("case", [c for c in CASES if c != "real-size"])
def test_ids_match_llama_cpp(vocab_dir: Path, tmp_path: Path, case: str) -> None:
    gguf = CASES[case](vocab_dir)
    assert_same_as_llama_cpp(case, gguf, ours(gguf, tmp_path / "tok"))


def assert_same_as_llama_cpp(
    case: str, gguf: Path, mine: Any, texts: tuple[str, ...] = TEXTS
) -> None:
    """Our ids equal llama.cpp's pinned ones (and its live ones, where it is installed)."""
    expected = pinned()["cases"][case]
    assert digest(gguf) == expected["sha256"], (
        f"the {case} vocabulary file changed since its llama.cpp ids were pinned: "
        "run `make llama-cpp-ids`"
    )
    assert set(texts) <= set(expected["ids"]), "new texts: run `make llama-cpp-ids`"
    for text in texts:
        assert mine.encode(text) == expected["ids"][text], text
    if HAS_LLAMA_CPP:
        assert llama_cpp_ids(gguf) == expected["ids"], "llama.cpp moved: run `make llama-cpp-ids`"


@pytest.fixture(scope="module")
def real_size(vocab_dir: Path) -> Path:
    """~150k tokens and ~150k merges, Qwen-style specials and pre-tokenizer."""
    return real_size_file(vocab_dir)


def test_real_size_vocabulary_opens_in_one_pass(
    real_size: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first open parses the metadata once, with our reader: gguf-py's per-field reader and
    transformers' GGUF readers (each a full pass: ~13 s per pass for Qwen's vocabulary on this
    machine) are never called."""
    import gguf
    import transformers.integrations.gguf as hf_gguf
    import transformers.modeling_gguf_pytorch_utils as hf_gguf_utils

    from engine.header_cache import read_gguf_header
    from engine.loader import load_tokenizer

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a slow GGUF metadata reader was called on the open path")

    monkeypatch.setattr(gguf.GGUFReader, "__init__", refuse)
    for module, name in (
        (hf_gguf, "get_gguf_tokenizer"),
        (hf_gguf, "read_gguf_metadata"),
        (hf_gguf_utils, "load_gguf_checkpoint"),
    ):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, refuse)
    before = gguf_reader.parse_count
    stages: list[tuple[str, float | None]] = []
    folder = read_gguf_header(real_size, lambda p: stages.append((p.stage, p.fraction)))
    assert gguf_reader.parse_count - before == 1
    fractions = [f for s, f in stages if s == "convert" and f is not None]
    assert fractions == sorted(fractions) and len(fractions) >= 5 and fractions[-1] == 1.0
    tokenizer = load_tokenizer(folder)
    assert len(tokenizer.get_vocab()) >= 151_643
    for text in TEXTS:
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == text
    assert tokenizer.eos_token == "<|im_end|>"
    assert read_gguf_header(real_size, lambda p: stages.append((p.stage, p.fraction))) == folder
    assert gguf_reader.parse_count - before == 1, "a later open reads the cache, not the file"


def test_real_size_vocabulary_ids_match_llama_cpp(real_size: Path, tmp_path: Path) -> None:
    assert_same_as_llama_cpp("real-size", real_size, ours(real_size, tmp_path / "tok"))
