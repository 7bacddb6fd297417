"""Gemma 4, SmolLM3 and Granite on the fast path, against transformers' float32 forward.

Tiny random files in llama.cpp's layouts (`bench.synth.gemma4`, `synth_smollm3`): the
gemma4 one carries E2B's per-layer embeddings, KV-sharing layers with double-wide MLPs,
sliding/global layers of different head sizes and KV-head counts, V = K on global layers,
proportional rotary and the final soft-cap; a plain variant has none of the E-model extras.
The float-activation graph must match transformers closely and agree on 32 greedy ids; the
KV cache (shared buffers included) must give the same logits after crop and restore as a
fresh run. Also: the per-layer arrays in the header are read, and what cannot run is refused
with a typed error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from bench.synth.gemma4 import PLAIN_GEMMA4, tiny_gemma4_config, write_tiny_gemma4
from bench.synth.llama_family import write_tiny_granite, write_tiny_smollm3
from engine.arch.hparams import HParams, check_fast_path, read_hparams
from engine.errors import CorruptModelError
from engine.gguf.reader import open_gguf
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import assert_matches_reference, reference_logits

PROMPT = [1, 17, 230, 4051, 99, 12, 7, 811, 3, 45, 600, 2048]  # longer than the window (8)
WINDOW = 512
CASES = [("gemma4", "Q4_K_M"), ("gemma4", "Q8_0"), ("gemma4-plain", "Q4_K_M")]
CASES += [("smollm3", "Q4_K_M"), ("smollm3", "Q8_0"), ("granite", "Q4_K_M")]


@pytest.fixture(scope="module")
def gemma4_q8(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """One gemma4 Q8_0 file and its reference, shared by the tests that only read it."""
    path = tmp_path_factory.mktemp("gemma4") / "gemma4-Q8_0.gguf"
    return path, write_tiny_gemma4(path, "Q8_0")


@pytest.fixture(scope="module")
def gemma4_hparams(gemma4_q8: tuple[Path, Any]) -> HParams:
    """Its header as the engine reads it (one pass of engine.gguf.reader)."""
    return read_hparams(open_gguf(gemma4_q8[0]))


def _write(path: Path, family: str, quant: str) -> Any:
    if family == "smollm3":
        return write_tiny_smollm3(path, quant)
    if family == "granite":
        return write_tiny_granite(path, quant)
    config = tiny_gemma4_config(**PLAIN_GEMMA4) if family == "gemma4-plain" else None
    return write_tiny_gemma4(path, quant, config)


@pytest.mark.parametrize(("family", "quant"), CASES, ids=[f"{a}-{q}" for a, q in CASES])
def test_fast_path_matches_transformers(
    cache_dir: Path, gemma4_q8: tuple[Path, Any], family: str, quant: str
) -> None:
    path = cache_dir / f"{family}-{quant}.gguf"
    if (family, quant) == ("gemma4", "Q8_0"):
        path, reference = gemma4_q8
    else:
        reference = _write(path, family, quant)
    exact = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert exact is not None, f"the fast path declined {family} {quant}"
    assert_matches_reference(exact, reference)


def test_gemma4_cache_reuse_and_int8(cache_dir: Path) -> None:
    """Crop, snapshot and restore keep the shared K/V right; int8 activations stay close."""
    path = cache_dir / "gemma4.gguf"
    reference = _write(path, "gemma4", "Q4_K_M")
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None
    full = [*PROMPT, 5, 6, 7, 8, 9]
    fresh = torch.from_numpy(runner.extend(full))  # (T, V)
    expected = reference_logits(reference, full)
    # Looser than the older families' 0.995: Gemma 4 attends with scale 1 (its Q/K norms
    # set the scores' size), so random-weight attention is sharper and int8 noise shows more.
    cosine = torch.nn.functional.cosine_similarity(fresh, expected, dim=-1)
    assert float(cosine.min()) > 0.98, cosine
    assert float((fresh.argmax(-1) == expected.argmax(-1)).float().mean()) >= 0.75
    runner.crop(len(PROMPT))
    parked = runner.snapshot()
    assert torch.equal(torch.from_numpy(runner.extend(full[len(PROMPT) :])), fresh[len(PROMPT) :])
    runner.reset()
    runner.extend([3, 3, 3])
    runner.restore(parked)
    assert torch.equal(torch.from_numpy(runner.extend(full[len(PROMPT) :])), fresh[len(PROMPT) :])


def test_gemma4_per_layer_header(gemma4_hparams: HParams) -> None:
    hp = gemma4_hparams
    assert hp.swa_layers == [True, True, False, True, True, False]
    assert hp.layer_kv_heads == [2, 2, 1, 2, 2, 1]
    assert hp.layer_head_dim == [64, 64, 128, 64, 64, 128]
    assert hp.layer_ffn == [512, 512, 512, 1024, 1024, 1024]
    assert [hp.kv_source(i) for i in range(6)] == [0, 1, 2, 1, 1, 2]
    assert (hp.per_layer_dim, hp.rope_base_swa, hp.attn_scale) == (32, 10000.0, 1.0)
    check_fast_path(hp)


def test_gemma4_experts_without_their_layout_are_refused(gemma4_hparams: HParams) -> None:
    """A gemma4 header declaring experts (26B-A4B) without their width is a typed error,
    never half-run (the experts themselves: test_arch_gemma4_moe)."""
    from dataclasses import replace

    hp = replace(gemma4_hparams, n_experts=128, n_experts_used=8)
    assert hp.has_experts
    with pytest.raises(CorruptModelError, match="expert"):
        check_fast_path(hp)
