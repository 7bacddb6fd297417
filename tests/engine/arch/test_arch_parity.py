"""The fast path against transformers' float32 forward, for every architecture and quant type.

Each case writes a tiny random model of one architecture to GGUF (`bench.synth.core`), whose
returned reference is transformers' own model holding exactly the dequantised weights. The
graph is built twice over: with float activations (``accuracy_level=0``) it must match the
reference closely — that proves the graph and the repacking are exact — and greedy ids must
agree for 32 tokens; with the production int8 activations (as llama.cpp quantises its
activations to Q8) the logits must stay close and the argmax must mostly agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bench.synth.core import DENSE_ARCHS, write_tiny_model
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW, assert_matches_reference, reference_logits

# (arch, quant): every architecture in a K-quant mix, every quant type on some architecture.
CASES = [
    ("llama", "Q4_K_M"),
    ("llama", "Q4_0"),
    ("llama", "Q4_1"),
    ("qwen2", "Q4_K_M"),
    ("qwen2", "Q5_0"),
    ("qwen2", "Q8_0"),
    ("qwen3", "Q4_K_M"),
    ("qwen3", "Q6_K"),
    ("gemma2", "Q4_K_M"),
    ("gemma2", "Q5_K"),
    ("gemma3", "Q4_K_M"),
    ("gemma3", "Q5_1"),
    ("phi3", "Q4_K_M"),
    ("phi3", "Q3_K"),
    ("llama", "Q2_K"),
    ("qwen2", "IQ4_NL"),
    ("qwen3", "IQ4_XS"),
    ("llama", "F16"),
    ("gemma3", "BF16"),
    ("phi3", "Q8_0"),
]


def test_every_architecture_is_covered() -> None:
    assert {arch for arch, _ in CASES} == set(DENSE_ARCHS)


@pytest.mark.parametrize(("arch", "quant"), CASES, ids=[f"{a}-{q}" for a, q in CASES])
def test_fast_path_matches_transformers(cache_dir: Path, arch: str, quant: str) -> None:
    path = cache_dir / f"{arch}-{quant}.gguf"
    reference = write_tiny_model(path, arch, quant)
    # A window within the trained context: Phi-3's short rope factors, as transformers uses
    # for sequences that short (llama.cpp picks long/short by the context window too).
    exact = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert exact is not None, f"the fast path declined {arch} {quant}"
    assert_matches_reference(exact, reference)


@pytest.mark.parametrize("arch", DENSE_ARCHS)
def test_int8_activations_stay_close(cache_dir: Path, arch: str) -> None:
    path = cache_dir / f"{arch}.gguf"
    reference = write_tiny_model(path, arch, "Q4_K_M")
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None
    expected = reference_logits(reference, PROMPT)
    got = torch.from_numpy(runner.extend(PROMPT))
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=-1)
    assert float(cosine.min()) > 0.995, cosine
    agree = (got.argmax(-1) == expected.argmax(-1)).float().mean()
    assert float(agree) >= 0.75
