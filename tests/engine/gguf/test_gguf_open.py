"""Opening a GGUF natively: the header cache (config + tokenizer only) is written once,
atomically, and reused; no float32 copy of the weights is ever written; the name and the
memory estimate come from the file's own header.

Every test points HEARTH_CACHE_DIR at its own temporary folder.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from engine.errors import InsufficientMemoryError
from engine.fastpath.plan import KernelPlan
from engine.gguf.header import read_gguf_summary
from engine.loader import LEGACY_MARKER, MARKER, header_folder, load_model, read_gguf_header
from engine.models import (
    bundled_gguf_path,
    check_memory,
    estimate_gguf_memory,
    quant_label,
    resolve_model,
)
from engine.types import LoadProgress

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(folder))
    return folder


def _weights_under(folder: Path) -> list[Path]:
    """Files that could be a copy of the weights: by suffix, or by size (> 10 MB)."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return [p for p in files if p.suffix in WEIGHT_SUFFIXES or p.stat().st_size > 10**7]


def _write_named_gguf(path: Path, *, name: str | None, file_type: int | None) -> Path:
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    if name is not None:
        writer.add_name(name)
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_tensor("output_norm.weight", np.ones(8, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_first_open_reads_header_once_and_writes_no_weights(
    cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gguf = bundled_gguf_path()
    legacy = cache / "gguf" / f"{gguf.stem}-0123456789abcdef0123"
    legacy.mkdir(parents=True)
    (legacy / LEGACY_MARKER).write_text(json.dumps({"source": str(gguf)}))
    (legacy / "model.safetensors").write_bytes(b"\0" * 1024)
    stale = cache / "gguf-meta" / f"{gguf.stem}-00000000000000000000"
    stale.mkdir(parents=True)
    (stale / MARKER).write_text(json.dumps({"source": str(gguf), "format": 1}))

    events: list[LoadProgress] = []
    with caplog.at_level(logging.INFO, logger="engine.loader"):
        loaded = load_model("bundled", progress=events.append)

    assert loaded.folder == header_folder(gguf) and loaded.folder.parent == cache / "gguf-meta"
    assert (loaded.folder / MARKER).is_file()
    assert {"config.json", "generation_config.json", "tokenizer.json"} <= {
        p.name for p in loaded.folder.iterdir()
    }
    assert not _weights_under(cache), "no copy of the weights may be written"
    assert sum(p.stat().st_size for p in loaded.folder.iterdir()) < 8 * 2**20
    assert not legacy.exists() and not (cache / "gguf").exists()
    assert "legacy float32" in caplog.text
    assert not stale.exists(), "the header cache of an older version of the file is dropped"
    converting = [e for e in events if e.stage == "convert"]
    assert "(once)" in converting[0].message and "tokenizer" in converting[0].message
    fractions = [e.fraction for e in converting]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert not loaded.model_loaded
    assert loaded.spec.name == "SmolLM2-135M-Instruct (Q4_1)"
    assert loaded.context_window == 8192
    im_end = loaded.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert {im_end, loaded.tokenizer.eos_token_id} <= loaded.eos_ids
    assert loaded.tokenizer.chat_template and "<|im_start|>" in loaded.tokenizer.chat_template


def test_second_open_reuses_the_header_cache(cache: Path) -> None:
    first = load_model("bundled")
    marker = first.folder / MARKER
    stamp, text = marker.stat().st_mtime_ns, marker.read_text()
    events: list[LoadProgress] = []
    second = load_model("bundled", progress=events.append)
    assert second.folder == first.folder
    assert marker.stat().st_mtime_ns == stamp and marker.read_text() == text
    assert not any(e.stage == "convert" for e in events)
    assert second.eos_ids == first.eos_ids
    assert second.tokenizer.encode("Hello, world") == first.tokenizer.encode("Hello, world")
    assert read_gguf_header(bundled_gguf_path(), events.append) == first.folder
    # A damaged header cache is rebuilt instead of failing every later open.
    (first.folder / "tokenizer.json").unlink()
    third = load_model("bundled")
    assert (third.folder / "tokenizer.json").is_file()
    assert not any(p.name.startswith(".tmp-") for p in third.folder.parent.iterdir())


def test_torch_memory_is_checked_before_torch_weights_load(cache: Path) -> None:
    loaded = load_model("bundled")
    with pytest.raises(InsufficientMemoryError, match=r"weights .* in float32") as info:
        loaded.check_memory("torch", available=64 * 2**20)
    assert "0.1 GiB is available" in str(info.value) and "KV cache" in str(info.value)
    assert not loaded.model_loaded
    assert loaded.check_memory("fast", available=2**40).path == "fast"


def test_memory_refusal_quotes_the_figures() -> None:
    summary = read_gguf_summary(bundled_gguf_path())
    estimate = estimate_gguf_memory(summary, 8192, "fast")
    with pytest.raises(InsufficientMemoryError) as info:
        check_memory(estimate, "cpu", available=estimate.total - 1)
    message = str(info.value)
    for figure in ("GiB", "weights", "repacked for the fast path", "KV cache", "8192 tokens"):
        assert figure in message
    assert "context window of at most" in message  # the weights fit; a shorter window would
    with pytest.raises(InsufficientMemoryError, match="more quantised"):
        check_memory(estimate, "cpu", available=estimate.weights // 2)
    assert check_memory(estimate, "cpu", available=estimate.total) is estimate


def test_bundled_estimate_is_within_a_sane_range_of_the_file() -> None:
    path = bundled_gguf_path()
    summary = read_gguf_summary(path)
    size = path.stat().st_size
    fast = estimate_gguf_memory(summary, 8192, "fast")
    assert size * 0.9 < fast.weights < size * 3
    torch32 = estimate_gguf_memory(summary, 8192, "torch", "float32")
    assert torch32.weights == 4 * sum(t.n_elements for t in summary.tensors)
    assert 134e6 * 4 < torch32.weights < 136e6 * 4  # SmolLM2-135M: 134.5M parameters
    # K and V: layers, kv heads, head_dim, tokens; float16 where the kernel's attention runs
    kv_bytes = 2 if KernelPlan.for_summary(summary).kv_half else 4
    assert fast.kv_cache == 2 * 30 * 3 * 64 * 8192 * kv_bytes
    bf16 = estimate_gguf_memory(summary, 8192, "torch", "bfloat16")
    assert bf16.weights * 2 == torch32.weights and bf16.kv_cache * 2 == torch32.kv_cache
    assert fast.overhead > 0 and fast.total == fast.weights + fast.kv_cache + fast.overhead


def test_gguf_name_is_declared_name_and_quantisation(tmp_path: Path) -> None:
    named = _write_named_gguf(tmp_path / "qwen.gguf", name="Qwen2.5 0.5B Instruct", file_type=15)
    assert resolve_model(str(named)).name == "Qwen2.5 0.5B Instruct (Q4_K_M)"
    bare = _write_named_gguf(tmp_path / "my-model.Q8_0.gguf", name=None, file_type=7)
    assert resolve_model(str(bare)).name == "my-model.Q8_0"
    unquantised = _write_named_gguf(tmp_path / "f.gguf", name="Tiny", file_type=None)
    assert resolve_model(str(unquantised)).name == "Tiny"
    assert resolve_model("bundled").name == "SmolLM2-135M-Instruct (Q4_1)"
    assert [quant_label(t) for t in (0, 1, 3, 15, 18, 1024 + 15)] == [
        "F32", "F16", "Q4_1", "Q4_K_M", "Q6_K", "Q4_K_M"
    ]  # fmt: skip
    assert quant_label(None) == quant_label(9999) == ""


@pytest.mark.slow
def test_torch_weights_of_a_gguf_load_in_memory_only(cache: Path) -> None:
    import torch

    loaded = load_model("bundled", dtype="float32", device="cpu")
    model = loaded.model
    assert loaded.model_loaded and type(model).__name__ == "LlamaForCausalLM"
    assert next(model.parameters()).dtype == torch.float32
    assert not _weights_under(cache), "the float32 weights live in memory only"
    ids = torch.tensor([loaded.tokenizer.encode("The capital of France is")])
    with torch.no_grad():
        logits = model(ids).logits[0, -1]  # (V,)
    assert loaded.tokenizer.decode(int(logits.argmax())).strip() == "Paris"
