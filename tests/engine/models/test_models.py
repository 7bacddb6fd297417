"""Model resolution and loading: bad input becomes a typed error naming the problem; memory
estimates refuse with figures. Opening a GGUF natively (header cache, no float32 copy) is in
test_gguf_open.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from engine.errors import (
    BackendUnavailableError,
    CorruptModelError,
    InsufficientMemoryError,
    ModelLoadError,
    ModelNotFoundError,
    UnsupportedModelError,
)
from engine.gguf.header import read_gguf_summary
from engine.loader import gguf_cache_key, load_model
from engine.models import (
    bundled_gguf_path,
    check_memory,
    choose_device,
    estimate_memory,
    resolve_model,
)


def test_missing_path_is_model_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ModelNotFoundError, match="does not exist") as info:
        load_model(str(missing))
    assert str(missing) in str(info.value)


def test_folder_that_is_not_a_model(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ModelNotFoundError, match=r"config\.json"):
        resolve_model(str(tmp_path))


def test_folder_with_config_but_no_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ModelNotFoundError, match="no weights"):
        resolve_model(str(tmp_path))


def test_unknown_architecture_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "florbnet"}))
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    with pytest.raises(UnsupportedModelError, match="florbnet"):
        load_model(str(tmp_path))


def test_broken_config_json_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(CorruptModelError, match=r"config\.json"):
        resolve_model(str(tmp_path))


def test_non_gguf_file_is_unsupported(tmp_path: Path) -> None:
    other = tmp_path / "weights.bin"
    other.write_bytes(b"\0" * 64)
    with pytest.raises(UnsupportedModelError, match=r"\.gguf"):
        resolve_model(str(other))


def test_truncated_gguf_is_corrupt(tmp_path: Path) -> None:
    bundled = bundled_gguf_path()
    cut = tmp_path / "cut.gguf"
    with bundled.open("rb") as src, cut.open("wb") as dst:
        dst.write(src.read(bundled.stat().st_size // 2))
    with pytest.raises(CorruptModelError, match="truncated") as info:
        load_model(str(cut))
    assert str(cut) in str(info.value)
    header_only = tmp_path / "header.gguf"
    header_only.write_bytes(bundled.read_bytes()[:4096])
    with pytest.raises(CorruptModelError, match="truncated"):
        load_model(str(header_only))


def test_garbage_gguf_is_corrupt(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(CorruptModelError, match="not a GGUF"):
        load_model(str(junk))
    tiny = tmp_path / "tiny.gguf"
    tiny.write_bytes(b"GG")
    with pytest.raises(CorruptModelError, match="not a GGUF"):
        load_model(str(tiny))


def test_bundled_gguf_header_parses() -> None:
    path = bundled_gguf_path()
    summary = read_gguf_summary(path)
    assert summary.architecture == "llama"
    assert summary.tensor_count == len(summary.tensors) == 272
    assert summary.data_end == path.stat().st_size
    data = sum(t.nbytes for t in summary.tensors)
    assert 0 < path.stat().st_size - data < 8 * 2**20  # the rest is the header (vocabulary)
    embed = next(t for t in summary.tensors if t.name == "token_embd.weight")
    assert embed.shape == (49152, 576)  # torch order: (vocabulary, hidden)
    assert summary.file_type == 3  # MOSTLY_Q4_1
    assert summary.name.startswith("Smollm2 135M")
    assert summary.arch_int("block_count") == 30
    assert summary.arch_int("attention.head_count_kv") == 3
    assert "tokenizer.ggml.tokens" not in summary.metadata  # arrays are skipped, not kept


def test_cache_key_follows_file_identity(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + b"\1" * 100)
    key = gguf_cache_key(f)
    assert gguf_cache_key(f) == key
    f.write_bytes(b"GGUF" + b"\2" * 100)
    os.utime(f, ns=(1, 1))
    assert gguf_cache_key(f) != key


def test_memory_estimate_refuses_with_figures(tiny_model_dir: Path) -> None:
    from transformers import LlamaConfig

    huge = LlamaConfig(
        vocab_size=128_000,
        hidden_size=16_384,
        intermediate_size=53_248,
        num_hidden_layers=126,
        num_attention_heads=128,
        num_key_value_heads=8,
    )
    with pytest.raises(InsufficientMemoryError, match=r"GiB.*weights .* KV cache"):
        check_memory(estimate_memory(huge, "float32", 131_072), "cpu")
    small = json.loads((tiny_model_dir / "config.json").read_text())
    check_memory(estimate_memory(LlamaConfig(**small), "float32", 1024), "cpu")  # fits


def test_unsupported_gguf_architecture_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    # A complete GGUF whose general.architecture is renamed to one transformers lacks.
    fake = tmp_path / "fake.gguf"
    shutil.copy(bundled_gguf_path(), fake)
    at = fake.read_bytes()[:8192].find(b"llama")
    assert at > 0
    with fake.open("r+b") as f:
        f.seek(at)
        f.write(b"zzzzz")
    with pytest.raises(UnsupportedModelError, match="zzzzz"):
        load_model(str(fake))
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))


def test_cuda_without_a_gpu_is_a_load_error_not_an_unreachable_server() -> None:
    """BackendUnavailableError reads "The server could not be reached" in the app."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ModelLoadError, match="CUDA is not available") as info:
        choose_device("cuda")
    assert not isinstance(info.value, BackendUnavailableError)


def test_a_folder_with_only_a_sentencepiece_tokenizer_loads(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    """Why sentencepiece is a dependency: transformers reads a bare ``tokenizer.model`` with it
    (without it, it mistakes the file for a tiktoken one and fails)."""
    import io

    import sentencepiece

    folder = tmp_path / "spm-model"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_model_dir / name, folder / name)
    lines = ["the quick brown fox jumps over the lazy dog", "hello world, a tiny tokenizer"] * 20
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=50, model_type="bpe",
        minloglevel=2, unk_id=0, bos_id=1, eos_id=2,
    )  # fmt: skip
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    tokenizer = load_model(str(folder), dtype="float32", device="cpu").tokenizer
    ids = tokenizer.encode("hello world", add_special_tokens=False)
    assert len(ids) > 1 and tokenizer.decode(ids) == "hello world"
