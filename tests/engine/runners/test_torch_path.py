"""The exact float32 torch path computes the model the GGUF describes, for every architecture.

transformers' GGUF reader misses llama3's rope_freqs, qwen3's head_dim, gemma's query scale and
softcaps, gemma3's linear rope scaling and phi3's partial rotary and longrope; the engine puts
them back (`engine.arch.hf_config`, applied by the header cache and the loader). Each case
writes a tiny random model (`bench.synth.core`), whose returned reference is transformers'
model built from the true config with exactly the file's dequantised weights, and opens the
file through the engine's own loader: the logits must be the reference's. Each case but
qwen2 (which needs nothing) fails without its override (checked by hand: 0.3 to 2.3 apart in
the logits, or a shape error). Also: Phi-3 beyond its trained context uses the long factors at
every position, as llama.cpp does; a Gemma 27B query scale survives transformers' int field;
an architecture the fast path does not know keeps transformers' config; the torch Engine's
greedy ids over a sliding window; a tiny file takes the fast path, with no notice in the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from bench.synth.core import DENSE_ARCHS, tiny_config, write_tiny_model

TOKENS = [1, 500, 23, 9000, 77, 12, 40000, 3, 5, 6, 49151, 8, 9, 10, 11, 12, 300, 4, 2000, 7]
PHI3_TRAINED = 4096  # the tiny phi3's original context: short factors up to here
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    **{arch: (arch, {}) for arch in DENSE_ARCHS},
    # The tiny gemma2's softcaps are transformers' defaults: change them so they must be read.
    "gemma2-softcaps": ("gemma2", {"attn_logit_softcapping": 10.0, "final_logit_softcapping": 2.0}),
    "gemma3-linear-rope": (
        "gemma3",
        {
            "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            }
        },
    ),
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(folder))
    return folder


def _write(tmp_path: Path, case: str, quant: str = "Q8_0") -> tuple[Path, Any]:
    arch, overrides = CASES[case]
    path = tmp_path / f"{case}.gguf"
    config = tiny_config(arch, **overrides) if overrides else None
    return path, write_tiny_model(path, arch, quant, config)


def _open(path: Path, context_window: int | None = None) -> Any:
    from engine.loader import load_model

    return load_model(str(path), dtype="float32", device="cpu", context_window=context_window)


def _logits(model: Any, ids: list[int] = TOKENS) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits


def _rotary(model: Any) -> Any:
    return model.model.rotary_emb


@pytest.mark.parametrize("case", list(CASES))
def test_torch_path_logits_equal_the_reference(tmp_path: Path, cache: Path, case: str) -> None:
    path, reference = _write(tmp_path, case)
    window = PHI3_TRAINED if CASES[case][0] == "phi3" else None  # short factors, as reference
    loaded = _open(path, window)
    expected = _logits(reference)
    assert torch.isfinite(expected).all() and expected.std() > 0.1  # not degenerate
    torch.testing.assert_close(_logits(loaded.model), expected, atol=1e-4, rtol=0)


def test_phi3_beyond_its_trained_context_uses_the_long_factors(tmp_path: Path, cache: Path) -> None:
    """llama.cpp (and the fast path) pick the long factors for the whole context when the
    window exceeds the trained one; so must the torch path, from position 0."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    path, reference = _write(tmp_path, "phi3")
    loaded = _open(path, 2 * PHI3_TRAINED)
    assert loaded.context_window > PHI3_TRAINED
    long_inv, scaling = ROPE_INIT_FUNCTIONS["longrope"](
        reference.config, torch.device("cpu"), seq_len=PHI3_TRAINED + 1
    )
    short_inv, _ = ROPE_INIT_FUNCTIONS["longrope"](reference.config, torch.device("cpu"))
    assert not torch.allclose(long_inv, short_inv)
    rotary = _rotary(loaded.model)
    for name in ("inv_freq", "original_inv_freq"):
        torch.testing.assert_close(getattr(rotary, name), long_inv, rtol=1e-6, atol=0)
    assert rotary.attention_scaling == pytest.approx(scaling) and scaling > 1.0
    ref_rotary = _rotary(reference)  # the reference, told to use its long factors throughout
    ref_rotary.original_inv_freq.copy_(long_inv)
    expected = _logits(reference)
    torch.testing.assert_close(_logits(loaded.model), expected, atol=1e-4, rtol=0)
    assert (_logits(_open(path, PHI3_TRAINED).model) - expected).abs().max() > 1e-2


def test_llama3_frequencies_are_the_files(tmp_path: Path, cache: Path) -> None:
    path, reference = _write(tmp_path, "llama")
    rotary, want = _rotary(_open(path).model), _rotary(reference).inv_freq
    assert reference.config.rope_parameters["rope_type"] == "llama3"
    for name in ("inv_freq", "original_inv_freq"):
        torch.testing.assert_close(getattr(rotary, name), want, rtol=1e-6, atol=0)


def test_gemma_27b_query_scale_is_an_int_transformers_accepts() -> None:
    """llama.cpp scales Gemma 27B queries by 1/sqrt(hidden/heads) (144 for gemma-2-27b), not
    1/sqrt(head_dim): a file's scale must reach Gemma2Config's int field intact."""
    from transformers import Gemma2Config

    from engine.arch.hf_config import config_overrides
    from engine.arch.hparams import HParams

    hp = HParams(
        arch="gemma2",
        n_layers=46,
        hidden=4608,
        ffn=36864,
        n_heads=32,
        n_kv_heads=16,
        head_dim=128,
        vocab=256000,
        context=8192,
        rms_eps=1e-6,
        rope_base=10000.0,
        rope_dim=128,
        sliding_window=4096,
        attn_softcap=50.0,
        final_softcap=30.0,
        attn_scale=1 / 144**0.5,
    )
    config = Gemma2Config(**config_overrides(hp))
    assert config.query_pre_attn_scalar == 144 and config.head_dim == 128
    assert (config.attn_logit_softcapping, config.sliding_window) == (50.0, 4096)


def test_an_architecture_the_fast_path_does_not_know_keeps_transformers_config(
    tmp_path: Path, cache: Path
) -> None:
    """A "mistral" GGUF (a tiny llama relabelled): no hyper-parameters, no overrides, no error."""
    import gguf
    import numpy as np
    from transformers import AutoConfig

    from engine.header_cache import HPARAMS_FILE

    src, path = tmp_path / "llama.gguf", tmp_path / "mistral.gguf"
    write_tiny_model(src, "llama", "F32")
    reader, writer = gguf.GGUFReader(src), gguf.GGUFWriter(str(path), "mistral")
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(
            key.replace("llama.", "mistral.", 1), field.contents(), field.types[0], sub
        )
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, np.array(tensor.data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    loaded = _open(path)
    assert loaded.hparams is None and not (loaded.folder / HPARAMS_FILE).exists()
    plain = AutoConfig.from_pretrained(tmp_path, gguf_file=path.name).to_dict()
    ours, skip = loaded.config.to_dict(), ("architectures", "_name_or_path")
    assert {k: v for k, v in ours.items() if k not in skip} == {
        k: v for k, v in plain.items() if k not in skip
    }
    assert ours["model_type"] == "mistral"


def test_torch_engine_greedy_over_a_sliding_window(tmp_path: Path, cache: Path) -> None:
    from engine.engine import Engine
    from engine.generate import reserve_for_reply
    from engine.text import fit_context
    from engine.types import Finished, GenerationRequest, Message, SamplingParams

    path, reference = _write(tmp_path, "gemma2")
    window = reference.config.sliding_window
    params = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=12)
    messages = (Message("user", "Tell me a story about a lighthouse keeper and a storm."),)
    engine = Engine(str(path), dtype="float32", backend="torch")
    try:
        assert engine.info.backend == "torch"
        ctx = engine.loaded.context_window
        fitted = fit_context(
            engine.tokenizer,
            messages,
            context_window=ctx,
            reserve_tokens=reserve_for_reply(params, ctx),
        )
        prompt = list(fitted.ids)
        assert len(prompt) > 2 * window
        done = list(engine.generate(GenerationRequest(messages, params)))[-1]
        eos = sorted(engine.eos_ids)
    finally:
        engine.close()
    assert isinstance(done, Finished)
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = reference.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=params.max_new_tokens,
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
    expected = out[0, len(prompt) :].tolist()
    expected = expected[:-1] if expected[-1] in eos else expected  # the EOS is not returned
    assert len(expected) >= 4
    assert list(done.token_ids) == expected


def test_tiny_qwen2_takes_the_fast_path(tmp_path: Path, cache: Path) -> None:
    from engine.engine import Engine

    path, _ = _write(tmp_path, "qwen2", "Q4_K_M")
    engine = Engine(str(path))
    try:
        assert engine.info.backend == "onnx"
        assert engine.info.slow_path_reason == ""
    finally:
        engine.close()
    cli = [sys.executable, "-m", "engine", "generate", "--model", str(path)]
    done = subprocess.run(
        [*cli, "--prompt", "hi", "--max-tokens", "8"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HEARTH_CACHE_DIR": str(cache)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr
    assert "Fast path unavailable" not in done.stdout + done.stderr
    assert done.stdout.strip()
