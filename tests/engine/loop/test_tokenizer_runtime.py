"""`EngineTokenizer` is the tokenizer transformers' TokenizersBackend makes of the same files.

The header cache's ``tokenizer.json`` + ``tokenizer_config.json`` for the bundled model and
for generated vocabularies of each kind (byte-level BPE with Qwen's specials, SentencePiece
with BOS, Gemma with its mask token) are loaded both ways; the backends must serialise alike
(same added tokens, same post-processor) and every part of the interface the engine uses must
answer alike. A later open of a .gguf on the fast path, generating included, must not import
transformers (~1.5 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.synth.vocab import (
    TEXTS,
    gemma_vocab,
    small_bpe,
    spm_vocab,
    with_specials,
    write_vocab_file,
)
from engine.gguf import reader as gguf_reader
from engine.gguf.tokenizer import tokenizer_files
from engine.tokenizer_runtime import EngineTokenizer
from tests.engine.support.tokenizer_fixture import bundled_gguf

CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 你好"}]


def _gguf(kind: str, folder: Path) -> Path:
    if kind == "bundled":
        return bundled_gguf()
    if kind == "qwen2":
        vocab = with_specials(
            small_bpe(3000), ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], ["<think>"]
        )
        return write_vocab_file(folder / "qwen2.gguf", vocab, arch="qwen2", pre="qwen2")
    if kind == "llama-spm":  # BOS added; "<unk>" is not a CONTROL token here
        return write_vocab_file(folder / "llama.gguf", spm_vocab(2000), arch="llama")
    return write_vocab_file(folder / "gemma.gguf", gemma_vocab(2000), arch="gemma3")


def _both(kind: str, folder: Path) -> tuple[Any, EngineTokenizer]:
    from transformers import TokenizersBackend

    body, config = tokenizer_files(gguf_reader.open_gguf(_gguf(kind, folder)).metadata)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    config.pop("tokenizer_class")
    backend: Any = TokenizersBackend
    reference = backend(tokenizer_file=str(folder / "tokenizer.json"), **config)
    return reference, EngineTokenizer.from_folder(folder)


@pytest.fixture(scope="module", params=["bundled", "qwen2", "llama-spm", "gemma"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _both(request.param, tmp_path_factory.mktemp(request.param))


def test_the_backends_serialise_alike(pair: Any) -> None:
    reference, ours = pair
    assert json.loads(ours.backend_tokenizer.to_str()) == json.loads(
        reference.backend_tokenizer.to_str()
    )


def test_special_tokens_and_vocabulary_answer_alike(pair: Any) -> None:
    reference, ours = pair
    for name in ("bos", "eos", "unk", "pad", "mask", "sep", "cls"):
        assert getattr(ours, f"{name}_token") == getattr(reference, f"{name}_token"), name
        assert getattr(ours, f"{name}_token_id") == getattr(reference, f"{name}_token_id"), name
    assert ours.special_tokens_map == reference.special_tokens_map
    assert ours.all_special_tokens == reference.all_special_tokens
    assert ours.all_special_ids == reference.all_special_ids
    assert ours.get_added_vocab() == reference.get_added_vocab()
    assert ours.get_vocab() == reference.get_vocab()
    assert (len(ours), ours.vocab_size) == (len(reference), reference.vocab_size)
    ids = [*range(min(len(ours), 300)), len(ours) - 1]
    for skip in (False, True):
        expected = reference.convert_ids_to_tokens(ids, skip_special_tokens=skip)
        assert ours.convert_ids_to_tokens(ids, skip_special_tokens=skip) == expected
    assert ours.convert_ids_to_tokens(5) == reference.convert_ids_to_tokens(5)
    tokens = [*reference.convert_ids_to_tokens(ids), "no-such-token-here"]
    assert ours.convert_tokens_to_ids(tokens) == reference.convert_tokens_to_ids(tokens)
    assert ours.token_to_id("no-such-token-here") is None


def test_encoding_and_decoding_answer_alike(pair: Any) -> None:
    reference, ours = pair
    for text in TEXTS:
        for specials in (True, False):
            ids = reference.encode(text, add_special_tokens=specials)
            assert ours.encode(text, add_special_tokens=specials) == ids, text
            assert ours(text, add_special_tokens=specials)["input_ids"] == ids
            for skip in (False, True):
                expected = reference.decode(ids, skip_special_tokens=skip)
                assert ours.decode(ids, skip_special_tokens=skip) == expected
    batch = list(TEXTS[:3])
    assert ours(batch)["input_ids"] == reference(batch)["input_ids"]


def test_chat_templates_tokenize_alike(pair: Any) -> None:
    reference, ours = pair
    if not reference.chat_template:
        pytest.skip("this vocabulary file has no chat template")
    for options in ({"tokenize": False}, {"return_dict": False}, {"return_dict": True}):
        expected = reference.apply_chat_template(CHAT, add_generation_prompt=True, **options)
        got = ours.apply_chat_template(CHAT, add_generation_prompt=True, **options)
        if isinstance(got, dict):
            assert got["input_ids"] == expected["input_ids"]
        else:
            assert got == expected


def test_a_later_fast_path_open_and_generation_import_no_transformers(tmp_path: Path) -> None:
    from bench.synth.core import write_tiny_model

    path = tmp_path / "tiny-llama-Q8_0.gguf"
    write_tiny_model(path, "llama", "Q8_0")
    script = (
        "import sys\n"
        "from engine.engine import Engine\n"
        "from engine.params import SamplingParams\n"
        "from engine.types import GenerationRequest, Message\n"
        f"engine = Engine({str(path)!r})\n"
        "request = GenerationRequest((Message('user', 'Hi'),), SamplingParams(max_new_tokens=3))\n"
        "events = list(engine.generate(request))\n"
        "print(engine.info.backend, type(engine.tokenizer).__name__,"
        " 'transformers' in sys.modules)\n"
    )
    env = {**os.environ, "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the first open converts; the second is the later open
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == "onnx EngineTokenizer False"
