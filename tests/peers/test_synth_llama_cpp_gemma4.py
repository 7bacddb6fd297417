"""llama.cpp reads the synthetic gemma4 and smollm3 GGUFs as their transformers references mean.

What only llama.cpp can confirm about `bench.synth.gemma4` / `synth_smollm3`: the
per-layer arrays, ``key_length_swa``, ``rope_freqs`` as proportional rotary, which layer a
KV-sharing layer reads (llama.cpp: the last own-K/V layer of the same kind), per-layer
embeddings, V = K, Gemma 4's experts beside the dense MLP (router input scale, per-expert
scale, the extra norms; `bench.synth.gemma4_moe`), and smollm3's NoPE every fourth layer.
F32 files: logits within llama.cpp's F16 KV-cache error of the float32 reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from bench.synth.gemma4 import PLAIN_GEMMA4, tiny_gemma4_config, write_tiny_gemma4
from bench.synth.gemma4_moe import TINY_GEMMA4_MOE
from bench.synth.llama_family import write_tiny_granite, write_tiny_smollm3

pytestmark = pytest.mark.peer
TOKENS = [1, 500, 23, 9000, 77, 12, 40000, 3, 5, 6, 49151, 8, 9, 10, 11, 12]


def _write(path: Path, family: str) -> Any:
    if family == "smollm3":
        return write_tiny_smollm3(path, "F32")
    if family == "granite":
        return write_tiny_granite(path, "F32")
    if family == "gemma4-moe":
        return write_tiny_gemma4(path, "F32", tiny_gemma4_config(**TINY_GEMMA4_MOE))
    plain = tiny_gemma4_config(**PLAIN_GEMMA4) if family == "gemma4-plain" else None
    return write_tiny_gemma4(path, "F32", plain)


@pytest.mark.parametrize("family", ["gemma4", "gemma4-plain", "gemma4-moe", "smollm3", "granite"])
def test_llama_cpp_matches_reference(family: str, tmp_path: Path) -> None:
    import llama_cpp

    reference = _write(tmp_path / "m.gguf", family)
    with torch.no_grad():
        expected = reference(torch.tensor([TOKENS])).logits[0].numpy()  # (T, V)
    llm = llama_cpp.Llama(
        str(tmp_path / "m.gguf"), n_ctx=64, logits_all=True, verbose=False, n_threads=2
    )
    llm.eval(TOKENS)
    actual = np.asarray(llm.scores[: len(TOKENS)])
    # F16 KV cache: ~3e-3 seen; gemma4-moe ~1e-2 (its experts' F16 activations, same routes)
    assert np.abs(actual - expected).max() < (1.5e-2 if family == "gemma4-moe" else 8e-3)
