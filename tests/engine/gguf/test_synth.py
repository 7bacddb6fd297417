"""Synthetic GGUFs (bench.synth.core) are what they claim: transformers reads each tiny file back
to the very logits of the reference model `write_tiny_model` returns, the keys and tensors only
llama.cpp reads hold the config's values, and the real-size writer follows llama.cpp's mixes.

transformers' GGUF loader ignores a few fields (llama3 rope scaling, qwen3 head_dim, gemma's
query scale and softcaps, phi3's partial rotary and longrope); `hf_gguf_overrides` passes them and
`test_file_carries_what_only_llama_cpp_reads` / `test_rope_tensors_equal_transformers_rope` check
the file's own copies. A peer check against llama.cpp itself is in tests/peers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from bench.synth.blocks import SUPPORTED, random_blocks, reference_weights
from bench.synth.configs import base_arch, real_size_config
from bench.synth.core import (
    DENSE_ARCHS,
    derived_tensors,
    hf_gguf_overrides,
    tensor_specs,
    tiny_config,
    write_real_size_model,
    write_tiny_model,
)
from bench.synth.plans import tensor_types
from engine.gguf.header import read_gguf_summary

TOKENS = [[1, 500, 23, 9000, 77, 12, 40000, 3, 5, 6, 49151, 8, 9, 10, 11, 12]]
MIX = {  # one tensor kind per type: every type the fast path may meet, in one file
    "token_embd.weight": "Q4_0",
    "output.weight": "F16",
    "*attn_q.weight": "Q2_K",
    "*attn_k.weight": "Q3_K",
    "*attn_v.weight": "Q5_K",
    "*attn_output.weight": "IQ4_XS",
    "*ffn_gate.weight": "Q4_1",
    "*ffn_up.weight": "Q5_1",
    "*ffn_down.weight": "IQ4_NL",
}
# (arch, quant, tiny_config overrides, GGML types the file must contain)
CASES: dict[str, tuple[str, Any, dict[str, Any], set[str]]] = {
    "llama-Q8_0": ("llama", "Q8_0", {}, {"Q8_0"}),
    "llama-mix": ("llama", MIX, {"hidden_size": 256, "head_dim": 64}, {v for v in MIX.values()}),
    "qwen2-Q4_K_M": ("qwen2", "Q4_K_M", {}, {"Q5_0", "Q8_0"}),  # widths not multiples of 256
    "qwen3-Q6_K": ("qwen3", "Q6_K", {"hidden_size": 256}, {"Q6_K"}),
    "gemma2-Q4_K": ("gemma2", "Q4_K", {"hidden_size": 256}, {"Q4_K", "Q5_0"}),
    "gemma3-Q5_0": ("gemma3", {"*ffn_*": "BF16", "*": "Q5_0"}, {}, {"Q5_0", "BF16"}),
    "phi3-Q4_K_M": ("phi3", "Q4_K_M", {"hidden_size": 256}, {"Q4_K", "Q6_K"}),
}
FIRST_CASE = {arch: next(c for c, v in CASES.items() if v[0] == arch) for arch in DENSE_ARCHS}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, Any]]:
    """case -> (GGUF path, reference model), each case written once per module."""
    cache: dict[str, tuple[Path, Any]] = {}

    def get(case: str) -> tuple[Path, Any]:
        if case not in cache:
            arch, quant, overrides, _ = CASES[case]
            path = tmp_path_factory.mktemp(case) / "model.gguf"
            cache[case] = path, write_tiny_model(path, arch, quant, tiny_config(arch, **overrides))
        return cache[case]

    return get


@pytest.fixture
def parse_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """transformers parses a GGUF twice per from_pretrained (config, weights): keep the first."""
    import gguf

    original, readers = gguf.GGUFReader, {}

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path) not in readers:
            readers[str(path)] = original(path, *args, **kwargs)
        return readers[str(path)]

    monkeypatch.setattr(gguf, "GGUFReader", reader)
    yield


def _file_types(path: Path) -> dict[str, str]:
    import gguf

    summary = read_gguf_summary(path)
    return {t.name: gguf.GGMLQuantizationType(t.ggml_type).name for t in summary.tensors}


@pytest.mark.parametrize("case", list(CASES))
def test_tiny_model_matches_transformers(case: str, written: Any, parse_once: None) -> None:
    from transformers import AutoModelForCausalLM

    arch, _, _, must_have = CASES[case]
    path, reference = written(case)
    assert must_have <= set(_file_types(path).values())
    loaded = AutoModelForCausalLM.from_pretrained(
        path.parent,
        gguf_file=path.name,
        dtype=torch.float32,
        attn_implementation="eager",
        **hf_gguf_overrides(arch, reference.config),
    ).eval()
    with torch.no_grad():
        expected = reference(torch.tensor(TOKENS)).logits  # (1, T, V)
        actual = loaded(torch.tensor(TOKENS)).logits
    assert torch.isfinite(expected).all() and expected.std() > 0.1  # not degenerate
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("arch", DENSE_ARCHS)
def test_file_carries_what_only_llama_cpp_reads(arch: str, written: Any) -> None:
    path, reference = written(FIRST_CASE[arch])
    config, meta = reference.config, read_gguf_summary(path).metadata
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    has_key_length = arch in ("llama", "qwen3", "gemma2", "gemma3")  # config.json has head_dim
    expected: dict[str, Any] = {
        "context_length": config.max_position_embeddings,
        "block_count": config.num_hidden_layers,
        "attention.head_count_kv": config.num_key_value_heads,
        "attention.key_length": head_dim if has_key_length else None,
        "rope.dimension_count": {"llama": head_dim, "phi3": int(0.75 * head_dim)}.get(arch),
        "attention.sliding_window": {"gemma2": 8, "gemma3": 8, "phi3": 0}.get(arch),
        "attn_logit_softcapping": 50.0 if arch == "gemma2" else None,
        "final_logit_softcapping": 30.0 if arch == "gemma2" else None,
        "rope.scaling.original_context_length": 4096 if arch == "phi3" else None,
    }
    actual = {key: meta.get(f"{arch}.{key}") for key in expected}
    assert actual == pytest.approx(expected)
    theta = {"gemma2": 10000.0, "gemma3": 1e6, "phi3": 10000.0}.get(arch)
    assert meta[f"{arch}.rope.freq_base"] == (theta or config.rope_parameters["rope_theta"])
    assert meta["tokenizer.ggml.eos_token_id"] == 2 and "phi3" not in meta["general.name"]


def test_rope_tensors_equal_transformers_rope(written: Any) -> None:
    """rope_freqs (llama3) and rope_factors_short (phi3) divide the base frequencies as HF does."""
    for arch in ("llama", "phi3"):
        path, reference = written(FIRST_CASE[arch])
        config, rotary = reference.config, reference.model.rotary_emb
        dim = 2 * rotary.inv_freq.numel()
        base = 1.0 / config.rope_parameters["rope_theta"] ** (torch.arange(0, dim, 2) / dim)
        name = "rope_freqs.weight" if arch == "llama" else "rope_factors_short.weight"
        divisors = torch.from_numpy(derived_tensors(arch, config)[name])
        torch.testing.assert_close(divisors, base.float() / rotary.inv_freq, rtol=1e-5, atol=0)
    scale = read_gguf_summary(path).metadata["phi3.rope.scaling.attn_factor"]
    assert scale == pytest.approx(rotary.attention_scaling, rel=1e-6)


def _real_types(arch: str, plan: str) -> dict[str, str]:
    specs = tensor_specs(arch, real_size_config(arch))
    return {k: v.name for k, v in tensor_types([(s.name, s.shape) for s in specs], plan).items()}


def test_q4_k_m_follows_llama_cpp_rules() -> None:
    qwen = _real_types("qwen2", "Q4_K_M")  # hidden 896: K-quants fall back; tied embedding
    assert qwen["token_embd.weight"] == "Q8_0" and qwen["blk.5.attn_q.weight"] == "Q5_0"
    more_bits = [i for i in range(24) if qwen[f"blk.{i}.attn_v.weight"] == "Q8_0"]
    assert more_bits == [0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23]
    assert [qwen[f"blk.{i}.ffn_down.weight"] for i in (0, 3, 5)] == ["Q6_K", "Q4_K", "Q6_K"]
    llama = _real_types("llama", "Q4_K_M")  # hidden 2048: tied embedding takes output's Q6_K
    assert llama["token_embd.weight"] == "Q6_K" and llama["blk.3.attn_v.weight"] == "Q4_K"
    phi = _real_types("phi3", "Q4_K_M")  # fused qkv counts as attn_v in today's llama.cpp
    assert [phi[f"blk.{i}.attn_qkv.weight"] for i in (0, 4, 6)] == ["Q6_K", "Q4_K", "Q6_K"]
    assert set(_real_types("gemma3", "Q8_0").values()) == {"Q8_0", "F32"}
    assert _real_types("qwen2", "Q4_0")["token_embd.weight"] == "Q8_0"  # output rule, fallback


def test_real_size_qwen2_q4_k_m_streams_the_mix(tmp_path: Path) -> None:
    path, seen = tmp_path / "qwen2.gguf", []
    write_real_size_model(path, "qwen2", "Q4_K_M", progress=lambda d, t: seen.append((d, t)))
    summary = read_gguf_summary(path)
    counts = Counter(_file_types(path).values())
    assert summary.architecture == "qwen2" and summary.file_type == 15  # MOSTLY_Q4_K_M
    assert counts == {"Q5_0": 132, "F32": 121, "Q8_0": 13, "Q6_K": 12, "Q4_K": 12}
    assert seen[-1][0] == seen[-1][1] and 390e6 < path.stat().st_size < 400e6  # as the real one


@pytest.mark.parametrize("qtype", SUPPORTED, ids=lambda t: t.name)
def test_random_blocks_look_trained(qtype: Any) -> None:
    weights = reference_weights(random_blocks(np.random.default_rng(0), qtype, 8, 512, 0.03), qtype)
    assert np.isfinite(weights).all() and weights.shape == (8, 512)
    assert abs(weights.mean()) < 0.005 and 0.02 < weights.std() < 0.045


def test_bad_quant_names_are_refused() -> None:
    specs = [("blk.0.attn_q.weight", (64, 64))]
    with pytest.raises(ValueError, match="unknown quant 'Q4_K_X'"):
        tensor_types(specs, "Q4_K_X")
    with pytest.raises(ValueError, match="no pattern"):
        tensor_types(specs, {"*ffn*": "Q8_0"})


def test_qwen2_7b_variant_has_qwen2_5_7b_size_and_q4_k_m_mix() -> None:
    specs = tensor_specs("qwen2", real_size_config("qwen2-7b"))
    params = sum(math.prod(s.shape) for s in specs)
    assert params == pytest.approx(7.61e9, rel=0.01)  # Qwen2.5-7B: 7.61B parameters
    q7 = _real_types_of("qwen2-7b", "Q4_K_M")  # widths multiples of 256: no Q5_0 fallback
    assert q7["output.weight"] == "Q6_K" and q7["blk.3.attn_q.weight"] == "Q4_K"
    assert "Q5_0" not in q7.values()


def _real_types_of(shape: str, plan: str) -> dict[str, str]:
    specs = tensor_specs(base_arch(shape), real_size_config(shape))
    return {k: v.name for k, v in tensor_types([(s.name, s.shape) for s in specs], plan).items()}
