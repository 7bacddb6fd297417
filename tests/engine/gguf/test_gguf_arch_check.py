"""Which GGUF architectures open, and what is said about the others.

An architecture opens when the fast path knows it (`engine.arch.ARCHS`) or the torch path can
write its config (`engine.arch.hf_config.TORCH_MODEL_TYPES`); the refusal names GGUF
architecture names as files spell them (issue 17 saw "unsupported 'qwen3moe' … transformers can
read … qwen3_moe"). A fast-path-only architecture opens without a torch config, and asking
for the torch path then says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.arch import ARCHS
from engine.arch.hf_config import TORCH_MODEL_TYPES
from engine.errors import UnsupportedModelError
from engine.models import check_gguf_architecture


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("arch", sorted(set(ARCHS) | set(TORCH_MODEL_TYPES)))
def test_architectures_either_path_runs_are_accepted(arch: str) -> None:
    check_gguf_architecture(arch, Path("model.gguf"))


def test_the_refusal_names_gguf_architecture_names() -> None:
    with pytest.raises(UnsupportedModelError) as caught:
        check_gguf_architecture("mamba2", Path("model.gguf"))
    message = str(caught.value)
    assert "'mamba2'" in message
    for arch in ("qwen2", "llama", *ARCHS):
        assert arch in message
    assert "qwen3_moe" not in message and "transformers" not in message


def test_a_fast_path_only_architecture_opens_and_refuses_the_torch_path(
    tmp_path: Path, cache_dir: Path
) -> None:
    from bench.synth.qwen35 import write_tiny_qwen35
    from engine.loader import load_model

    path = tmp_path / "tiny-qwen35.gguf"
    write_tiny_qwen35(path, "Q8_0")
    loaded = load_model(str(path), device="cpu")
    assert loaded.config is None and loaded.hparams is not None
    assert not (loaded.folder / "config.json").exists()
    assert loaded.tokenizer.encode("hello world")
    with pytest.raises(UnsupportedModelError, match="fast path only"):
        _ = loaded.model
