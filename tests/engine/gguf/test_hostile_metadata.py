"""Metadata that disagrees with the tensors (issue 22 A11): a truncated token list, special
ids past the vocabulary, a key_length the K projection does not have, a layer missing a
tensor. Each is refused on first open with a message naming what disagrees, before any
tokenizer or weights are built (the file is read by the real header cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import CorruptModelError
from engine.header_cache import read_gguf_header
from tests.engine.support.hostile_gguf import STR, U32, gguf_bytes, scalar, string_array, write

VOCAB, HIDDEN, HEADS, KV_HEADS, HEAD, LAYERS = 16, 8, 2, 1, 4, 4
LAYER = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
         "ffn_up", "ffn_down")  # fmt: skip


def _layer_tensors(skip: str = "") -> list[tuple[str, list[int]]]:
    shapes = {
        "attn_norm": [HIDDEN],
        "attn_q": [HIDDEN, HEADS * HEAD],
        "attn_k": [HIDDEN, KV_HEADS * HEAD],
        "attn_v": [HIDDEN, KV_HEADS * HEAD],
        "attn_output": [HEADS * HEAD, HIDDEN],
        "ffn_norm": [HIDDEN],
        "ffn_gate": [HIDDEN, 16],
        "ffn_up": [HIDDEN, 16],
        "ffn_down": [16, HIDDEN],
    }
    return [
        (f"blk.{i}.{name}.weight", shapes[name])
        for i in range(LAYERS)
        for name in LAYER
        if f"blk.{i}.{name}" != skip
    ]


def model(
    *,
    tokens: int = VOCAB,
    key_length: int = HEAD,
    bos: int = 1,
    skip: str = "",
    swa: int | None = None,
) -> bytes:
    kvs = [
        ("general.architecture", scalar(STR, "llama")),
        ("llama.block_count", scalar(U32, LAYERS)),
        ("llama.context_length", scalar(U32, 256)),
        ("llama.embedding_length", scalar(U32, HIDDEN)),
        ("llama.attention.head_count", scalar(U32, HEADS)),
        ("llama.attention.head_count_kv", scalar(U32, KV_HEADS)),
        ("llama.attention.key_length", scalar(U32, key_length)),
        ("llama.feed_forward_length", scalar(U32, 16)),
        ("tokenizer.ggml.model", scalar(STR, "gpt2")),
        ("tokenizer.ggml.tokens", string_array([f"t{i}" for i in range(tokens)])),
        ("tokenizer.ggml.bos_token_id", scalar(U32, bos)),
    ]
    if swa is not None:  # Gemma 4: sliding-window layers (layer 0 among them) have their own
        kvs.append(("llama.attention.key_length_swa", scalar(U32, swa)))
    tensors = [("token_embd.weight", [HIDDEN, VOCAB]), ("output_norm.weight", [HIDDEN])]
    tensors += _layer_tensors(skip)
    return gguf_bytes(kvs, tensors)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (model(tokens=VOCAB - 3), "vocabulary lists 13 tokens"),
        (model(bos=VOCAB + 100), "bos_token_id is 116"),
        (model(key_length=64), "key_length is 64"),
        # the architecture's own list (engine.arch.tensors), not a guess from other layers
        (model(skip="blk.2.attn_v"), r"blk\.2\.attn_v\.weight is missing"),
    ],
    ids=["truncated-tokens", "bos-past-vocab", "key-length", "missing-layer-tensor"],
)
def test_metadata_that_disagrees_with_the_tensors_is_refused(
    tmp_path: Path, data: bytes, named: str
) -> None:
    path = write(tmp_path / "bad.gguf", data)
    with pytest.raises(CorruptModelError, match=named):
        read_gguf_header(path, lambda _p: None)


def test_consistent_files_pass(tmp_path: Path) -> None:
    from engine.gguf.consistency import check_consistency
    from engine.gguf.reader import open_gguf
    from tests.engine.support.tokenizer_fixture import bundled_gguf

    good = write(tmp_path / "good.gguf", model())
    check_consistency(open_gguf(good), good)
    # Layer 0 a sliding-window layer whose heads are key_length_swa wide (Gemma 4's layout).
    windowed = write(tmp_path / "swa.gguf", model(key_length=2 * HEAD, swa=HEAD))
    check_consistency(open_gguf(windowed), windowed)
    check_consistency(open_gguf(bundled_gguf()), bundled_gguf())
