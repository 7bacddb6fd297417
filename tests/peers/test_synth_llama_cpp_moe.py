"""llama.cpp reads the synthetic qwen3moe and gpt-oss GGUFs as their transformers references mean.

What only llama.cpp can confirm about `bench.synth.moe`: the stacked expert tensors and
their order, the router (qwen3moe: renormalised top-k; gpt-oss: biased, softmax over the
top-k), gpt-oss's interleaved gate/up split, biases, attention sinks, which layers slide, YaRN
keys and clamped SwiGLU. F32 files: logits within llama.cpp's F16 KV-cache error of the
float32 reference (a little wider than dense models': routing weights carry it on).

llama.cpp rounds YaRN's correction range outward (transformers' ``truncate: true``), while
gpt-oss's own code and transformers' gpt-oss default do not, and the fast path follows them
(`engine.arch.yarn`); so gpt-oss is compared here with a rounding twin.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.synth.moe import MOE_ARCHS, tiny_moe_config, write_moe_model

pytestmark = pytest.mark.peer
TOKENS = [1, 500, 23, 9000, 77, 12, 40000, 3, 5, 6, 49151, 8, 9, 10, 11, 12]


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_llama_cpp_matches_reference(arch: str, tmp_path: Path) -> None:
    import llama_cpp

    config = tiny_moe_config(arch)
    if arch == "gpt-oss":
        config.rope_parameters = {**config.rope_parameters, "truncate": True}
    reference = write_moe_model(tmp_path / "m.gguf", arch, "F32", config)
    assert reference is not None
    with torch.no_grad():
        expected = reference(torch.tensor([TOKENS])).logits[0].numpy()  # (T, V)
    llm = llama_cpp.Llama(
        str(tmp_path / "m.gguf"), n_ctx=64, logits_all=True, verbose=False, n_threads=2
    )
    llm.eval(TOKENS)
    actual = np.asarray(llm.scores[: len(TOKENS)])
    assert np.abs(actual - expected).max() < 1.5e-2  # F16 KV cache: up to ~9e-3 seen
