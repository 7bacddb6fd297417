"""llama.cpp itself reads the synthetic GGUFs (bench.synth.core) as the reference models mean them.

The transformers round trip (tests/engine/gguf/test_synth.py) cannot see what only llama.cpp reads:
llama3 `rope_freqs`, phi3 longrope factors and attn_factor, gemma's 1/sqrt(head_dim) query
scale, softcaps and sliding windows, gemma3's local rope base. Here llama.cpp's own logits must
match the float32 reference: tightly for F32 files, loosely for quantised ones (llama.cpp
quantises activations for its dot products, so only a layout or semantics error fails those).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from bench.synth.core import DENSE_ARCHS, tiny_config, write_tiny_model

pytestmark = pytest.mark.peer
TOKENS = [1, 500, 23, 9000, 77, 12, 40000, 3, 5, 6, 49151, 8, 9, 10, 11, 12]


def _logits(path: Path, reference: Any) -> tuple[np.ndarray, np.ndarray]:
    import llama_cpp

    with torch.no_grad():
        expected = reference(torch.tensor([TOKENS])).logits[0].numpy()  # (T, V)
    llm = llama_cpp.Llama(str(path), n_ctx=64, logits_all=True, verbose=False, n_threads=2)
    llm.eval(TOKENS)
    return np.asarray(llm.scores[: len(TOKENS)]), expected


@pytest.mark.parametrize("arch", DENSE_ARCHS)
def test_llama_cpp_matches_reference_on_f32_files(arch: str, tmp_path: Path) -> None:
    reference = write_tiny_model(tmp_path / "m.gguf", arch, "F32")
    actual, expected = _logits(tmp_path / "m.gguf", reference)
    assert np.abs(actual - expected).max() < 8e-3  # F16 KV cache: ~1e-3 seen


@pytest.mark.parametrize(
    ("arch", "quant"),
    [("qwen2", "Q4_K_M"), ("phi3", "Q4_K_M"), ("gemma3", "Q6_K"), ("llama", "IQ4_XS")],
)
def test_llama_cpp_matches_reference_on_quantised_files(
    arch: str, quant: str, tmp_path: Path
) -> None:
    config = tiny_config(arch, hidden_size=256)
    reference = write_tiny_model(tmp_path / "m.gguf", arch, quant, config)
    actual, expected = _logits(tmp_path / "m.gguf", reference)
    assert np.abs(actual - expected).mean() < 0.1 * expected.std()  # ~0.02 seen; a bug: ~1
