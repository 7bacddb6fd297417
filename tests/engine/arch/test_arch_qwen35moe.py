"""Qwen3.5 MoE (qwen35moe) on the fast path, against transformers' float32 forward.

A tiny random qwen35moe GGUF in llama.cpp's layout (`bench.synth.qwen35moe`: qwen35's
three Gated DeltaNet layers and one gated attention layer, each with 8 routed experts, 3 per
token, decisive routers, and a sigmoid-gated shared expert of another width; no
feed_forward_length key; the MTP block) is checked against transformers'
``Qwen3_5MoeForCausalLM`` holding exactly its dequantised weights: with float activations the
logits match closely and 32 greedy ids agree (decode routes one row at a time, prefill many
rows per expert), in a Q4_K_M mix (Q4_K's per-block minima in experts and shared expert) and
Q8_0, also with gate and up experts fused in one tensor as newer converters write them; with
the production int8 activations the logits stay close. Prefix reuse of the
recurrent state is the qwen35 tests' subject (the same runner code), not repeated here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from bench.synth.qwen35moe import write_tiny_qwen35moe
from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.cache import MODEL_FILE, graph_folder
from engine.kernels.experts import INPUT_FORMS
from tests.engine.support.fast_runner import build_fast_runner

pytestmark = pytest.mark.usefixtures("cache_dir")  # every test: a cache of its own
PROMPT = [1, 17, 230, 4051, 99, 12, 7, 811, 3, 45, 600, 2048]
WINDOW = 512


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("qwen35moe")
    out = {}
    for quant in ("Q4_K_M", "Q8_0"):
        path = root / f"qwen35moe-{quant}.gguf"
        out[quant] = (path, write_tiny_qwen35moe(path, quant))
    return out


def _reference(model: Any, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0].float()  # (T, V)


def _close(got: Any, expected: Any, atol: float = 2e-4) -> None:
    got, expected = torch.as_tensor(got), torch.as_tensor(expected)  # Runners hand numpy
    scale = float(expected.abs().max())
    diff = float((got - expected).abs().max())
    assert diff <= atol * scale + 1e-5, f"max |diff| {diff:.3g} of logits up to {scale:.3g}"


@pytest.mark.parametrize("quant", ["Q4_K_M", "Q8_0"])
def test_matches_transformers(models: dict[str, tuple[Path, Any]], quant: str) -> None:
    path, reference = models[quant]
    runner = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert runner is not None, "the fast path declined qwen35moe"
    hp = runner.hparams
    assert (hp.n_layers, hp.n_experts, hp.n_experts_used) == (4, 8, 3)
    assert (hp.expert_ffn, hp.shared_expert_ffn, hp.ffn) == (256, 512, 0)
    _close(runner.extend(PROMPT), _reference(reference, PROMPT))
    runner.reset()
    ids: list[int] = []
    logits = runner.extend(PROMPT, last_only=True)[0]
    for _ in range(32):
        ids.append(int(logits.argmax()))
        logits = runner.extend([ids[-1]], last_only=True)[0]
    expected: list[int] = []
    for _ in range(32):
        expected.append(int(_reference(reference, PROMPT + expected)[-1].argmax()))
    assert ids == expected


def test_fused_gate_up_experts(cache_dir: Path) -> None:
    """A file with one ``ffn_gate_up_exps`` per block (newer converters; llama.cpp loads
    either layout) runs the same as split gate/up experts."""
    path = cache_dir / "fused.gguf"
    reference = write_tiny_qwen35moe(path, "Q4_K_M", fused_gate_up=True)
    runner = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert runner is not None
    _close(runner.extend(PROMPT), _reference(reference, PROMPT))


def test_shared_expert_counts(models: dict[str, tuple[Path, Any]]) -> None:
    """The reference without its shared experts is far from the fast path: the comparison
    above sees the shared expert and its gate, not only the routed experts."""
    path, reference = models["Q8_0"]
    runner = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert runner is not None
    got = torch.from_numpy(runner.extend(PROMPT))
    saved = {}
    with torch.no_grad():
        for i, layer in enumerate(reference.model.layers):
            gate = layer.mlp.shared_expert_gate.weight
            saved[i] = gate.clone()
            gate.fill_(0.0)  # σ(0) = 1/2: the shared expert at half weight
        try:
            halved = _reference(reference, PROMPT)
        finally:
            for i, layer in enumerate(reference.model.layers):
                layer.mlp.shared_expert_gate.weight.copy_(saved[i])
    scale = float(halved.abs().max())
    assert float((got - halved).abs().max()) > 0.05 * scale


def test_int8_activations_stay_close(models: dict[str, tuple[Path, Any]]) -> None:
    path, reference = models["Q4_K_M"]
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None
    got, expected = torch.from_numpy(runner.extend(PROMPT)), _reference(reference, PROMPT)
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=-1)
    # Looser than qwen35's 0.95/0.985: int8 activations upstream move some rows' router
    # logits past a near-tie between their 3rd and 4th expert. llama.cpp (its Q8
    # activations) on this very file: worst row 0.755, mean 0.962, 7 of 12 argmax equal;
    # ours 0.857, 0.983 (c8d9a2c's centred codes: eleven rows 0.977-0.9997, the twelfth is the
    # near-tie) and 8 of 12. A layout or routing bug gives cosines near 0.
    assert float(cosine.min()) > 0.8 and float(cosine.mean()) > 0.97, cosine
    agree = (got.argmax(-1) == expected.argmax(-1)).float().mean()
    assert float(agree) >= 0.6


def test_every_matrix_mode_keeps_ssm_out_near_float(
    models: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every matrix on the kernel (files of 256 MB and more) a dense qwen35's ssm_out
    takes int8 activations as llama.cpp's do; a MoE file's are quantized twice (the value,
    then what int8 left over), its routers being what int8 error would move
    (`engine.fastpath.deltanet`). On this file int8 ones gave a worst row of 0.863 and a
    mean of 0.969 against transformers; float and twice-quantized ones stay within the
    default graph's bounds."""
    from engine.kernels import native

    if not native.serves():
        pytest.skip("every-matrix mode needs the native kernel ops")
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")
    path, reference = models["Q4_K_M"]
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None and runner.kernel_ops == "native"
    got, expected = torch.from_numpy(runner.extend(PROMPT)), _reference(reference, PROMPT)
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=-1)
    assert float(cosine.min()) > 0.8 and float(cosine.mean()) > 0.97, cosine
    forms = _ssm_out_forms(graph_folder(path, ACCURACY_INT8))
    assert forms and set(forms) == {INPUT_FORMS["int8x2"]}, forms  # every layer's ssm_out


def _ssm_out_forms(folder: Path) -> list[int]:
    """The ``float`` attribute (an INPUT_FORMS code) of each kernel node running an ssm_out."""
    import onnx

    model = onnx.load(str(folder / MODEL_FILE), load_external_data=False)
    out = []
    for node in model.graph.node:
        a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        if node.op_type == "HearthMatMul" and b".ssm_out." in a["names"]:
            out.append(int(a.get("float", 0)))
    return out
