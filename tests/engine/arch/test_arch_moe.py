"""Mixture-of-experts architectures on the fast path against transformers' float32 forward.

Each case writes a tiny random MoE model (`bench.synth.moe`: 8 experts, 3 routed per
token, routers wide enough that each top-3 is decisive) whose transformers twin holds exactly
the dequantised weights: qwen3moe, and gpt-oss with its biases, attention sinks, alternating
sliding (window 8) / full layers, YaRN rotation and clamped SwiGLU. With float activations
the fast path must match it closely, Q4_K's per-block minima in the experts included, and
greedy ids must agree for 32 tokens (decode routes one row at a time, prefill many rows per
expert); with the production int8 activations the logits must stay close.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bench.synth.moe import MOE_ARCHS, write_moe_model
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW, assert_matches_reference, reference_logits

CASES = [
    ("qwen3moe", "Q4_K_M"),
    ("qwen3moe", "Q8_0"),
    ("gpt-oss", "Q4_K_M"),
    ("gpt-oss", "Q8_0"),
    ("gpt-oss", "MXFP4_MOE"),  # llama-quantize's mix: experts MXFP4, the rest Q8_0
]


def test_every_moe_architecture_is_covered() -> None:
    assert {arch for arch, _ in CASES} == set(MOE_ARCHS)


@pytest.mark.parametrize(("arch", "quant"), CASES, ids=[f"{a}-{q}" for a, q in CASES])
def test_moe_matches_transformers(cache_dir: Path, arch: str, quant: str) -> None:
    path = cache_dir / f"{arch}-{quant}.gguf"
    reference = write_moe_model(path, arch, quant)
    assert reference is not None
    exact = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert exact is not None, f"the fast path declined {arch} {quant}"
    assert_matches_reference(exact, reference)


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_moe_int8_activations_stay_close(cache_dir: Path, arch: str) -> None:
    """int8 activations: as close as a dense model of the same width (measured ~0.996 there)."""
    path = cache_dir / f"{arch}.gguf"
    reference = write_moe_model(path, arch, "Q4_K_M")
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None
    expected = reference_logits(reference, PROMPT)
    got = torch.from_numpy(runner.extend(PROMPT))
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=-1)
    assert float(cosine.min()) > 0.99, cosine
    agree = (got.argmax(-1) == expected.argmax(-1)).float().mean()
    assert float(agree) >= 0.75


def test_a_moe_file_without_its_expert_layout_is_refused(cache_dir: Path) -> None:
    """A qwen3moe/gpt-oss file missing expert_used_count (or the rest) is a typed error."""
    import gguf

    from engine.arch.hparams import check_fast_path, read_hparams
    from engine.errors import CorruptModelError

    path = cache_dir / "qwen3moe.gguf"
    write_moe_model(path, "qwen3moe", "Q8_0", reference=False)
    hp = read_hparams(gguf.GGUFReader(str(path)))
    check_fast_path(hp)
    for broken in ({"n_experts_used": 0}, {"n_experts_used": 99}, {"expert_ffn": 0}):
        with pytest.raises(CorruptModelError, match="expert"):
            check_fast_path(replace(hp, **broken))


def test_experts_are_grouped_under_few_if_nodes() -> None:
    """Groups of ~sqrt(E/k) experts that divide E: the tiny files (8 experts, 3 routed) run
    groups of 2, so the parity cases above cover a chosen group's unchosen member (zero rows)."""
    from engine.fastpath.moe import group_size

    assert group_size(8, 3) == 2
    assert group_size(128, 8) == 4  # Qwen3-30B-A3B
    assert group_size(32, 4) in (2, 4)  # gpt-oss-20b
    for n_experts, k in ((128, 6), (64, 8), (60, 4), (8, 8), (1, 1)):
        size = group_size(n_experts, k)
        assert n_experts % size == 0 and 1 <= size <= n_experts


def test_every_expert_weight_sits_where_onnx_runtime_prepacks_it(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Experts are ``If`` nodes nested in their group's ``If``; each MatMulNBits must find its
    weight in its own scope or the one above: ONNX Runtime prepacks nothing from further up,
    and runs such a MatMulNBits unpacked (~100x slower, still correct, so parity can't tell).
    (The nested ``If`` graph is what runs without the expert op: HEARTH_EXPERT_KERNEL=0.)"""
    import onnx

    monkeypatch.setenv("HEARTH_EXPERT_KERNEL", "0")
    path = cache_dir / "qwen3moe.gguf"
    write_moe_model(path, "qwen3moe", "Q4_K_M", reference=False)
    assert build_fast_runner(path, window=WINDOW) is not None
    (model_path,) = (cache_dir / "cache").rglob("model.onnx")
    model = onnx.load(str(model_path), load_external_data=False)
    depths: list[int] = []

    def walk(graph: onnx.GraphProto, scopes: list[set[str]]) -> None:
        scopes = [*scopes, {t.name for t in graph.initializer}]
        for node in graph.node:
            if node.op_type == "MatMulNBits":
                assert node.input[1] in scopes[-1] | scopes[max(0, len(scopes) - 2)], node.name
                depths.append(len(scopes) - 1)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g, scopes)

    walk(model.graph, [])
    assert max(depths) == 2  # an expert's MatMulNBits: main graph → group → member
