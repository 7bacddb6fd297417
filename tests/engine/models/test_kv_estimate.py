"""The memory check's KV cache per token equals what the fast-path runner really allocates.

Hybrid models keep K/V only in their attention layers (qwen35: one in four, its
multi-token-prediction block not run) and Gemma 4 varies head sizes per layer and lets later
layers share an earlier layer's cache; a header-only formula (layers × kv heads × head size)
counts those 2-4× too high, and the fit verdict would refuse models that fit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.synth.core import write_tiny_model
from bench.synth.gemma4 import write_tiny_gemma4
from bench.synth.qwen35 import write_tiny_qwen35
from engine.gguf.header import read_gguf_summary
from engine.models import estimate_gguf_memory
from tests.engine.support.fast_runner import build_fast_runner

WRITERS: dict[str, Callable[[Path], Any]] = {
    "qwen2": lambda p: write_tiny_model(p, "qwen2", "Q8_0"),
    "phi3": lambda p: write_tiny_model(p, "phi3", "Q8_0"),  # fused Q/K/V: the header formula
    "qwen35": lambda p: write_tiny_qwen35(p, "Q8_0"),
    "gemma4": lambda p: write_tiny_gemma4(p, "Q8_0"),
}


@pytest.mark.parametrize("arch", sorted(WRITERS))
def test_kv_per_token_is_what_the_runner_allocates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arch: str
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / f"{arch}.gguf"
    WRITERS[arch](path)
    estimate = estimate_gguf_memory(read_gguf_summary(path), 256, "fast")
    runner = build_fast_runner(path, window=256)
    assert runner is not None
    allocated = sum(b.nbytes for b in runner._buffers) // runner.capacity  # float32 K and V
    assert estimate.kv_per_token == allocated
