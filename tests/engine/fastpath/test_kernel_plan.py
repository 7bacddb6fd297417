"""The kernel plan (`engine.fastpath.plan.KernelPlan`): one decision per tensor, with its reason,
that the graph's folder name, the conversion and the memory estimate all read.

Tensor tables are written here (names, ggml types, byte counts: no weights needed); the
switches are the real environment variables.
"""

from __future__ import annotations

import pytest

from engine.fastpath.plan import KernelPlan, kernel_enabled

Q4_K, Q8_0, F32 = 12, 8, 0
GIB = 1 << 30


def dense_table(layers: int = 2) -> list[tuple[str, int, int]]:
    table = [("token_embd.weight", Q8_0, 1000), ("output.weight", Q4_K, 900)]
    for i in range(layers):
        table += [(f"blk.{i}.attn_norm.weight", F32, 16)]
        table += [(f"blk.{i}.attn_{p}.weight", Q4_K, 100) for p in ("q", "k", "v", "output")]
        table += [(f"blk.{i}.ffn_{p}.weight", Q4_K, 300) for p in ("gate", "up", "down")]
    return table


def moe_table() -> list[tuple[str, int, int]]:
    table = dense_table(1)[:7]  # embeddings, head, norm, attention of one layer
    table += [("blk.0.ffn_gate_inp.weight", F32, 64)]
    table += [(f"blk.0.ffn_{p}_exps.weight", Q4_K, 5000) for p in ("gate", "up", "down")]
    return table


def test_with_the_kernel_off_every_matrix_is_repacked_and_the_plan_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEARTH_EXPERT_KERNEL", "0")
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "0")  # a process that built the kernel first
    plan = KernelPlan.for_table("qwen3moe", 8 * GIB, moe_table())
    assert (plan.expert_bytes, plan.dense_bytes, plan.matrices) == (0, 0, frozenset())
    op, why = plan.kernel_for("blk.0.ffn_up_exps.weight")
    assert op == "MatMulNBits" and "HEARTH_EXPERT_KERNEL=0" in why
    assert plan.folder_tag() == "" and plan.mapped_bytes(moe_table_bytes()) == 0
    assert "HEARTH_EXPERT_KERNEL=0" in plan.describe()


def moe_table_bytes() -> list[tuple[str, int]]:
    return [(name, n) for name, _, n in moe_table()]


@pytest.mark.skipif(not kernel_enabled(), reason="the expert kernel is not built here")
def test_a_moe_file_maps_its_experts_and_puts_its_projections_beside_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", str(64 * GIB))  # not every matrix
    plan = KernelPlan.for_table("qwen3moe", 8 * GIB, moe_table())
    assert plan.expert_bytes == 15000 and plan.kernel_for("blk.0.ffn_down_exps.weight")[0] == (
        "HearthExperts"
    )
    assert "blk.0.attn_q.weight" in plan.matrices and not plan.every
    assert plan.kernel_for("blk.0.attn_q.weight") == (
        "HearthMatMul",
        "a projection or the head, beside experts or MLPs on the kernel",
    )
    assert plan.kernel_for("blk.0.ffn_gate_inp.weight")[0] == "MatMulNBits"  # the router
    # The memory estimate and the conversion count the same mapped bytes.
    mapped = 15000 + 4 * 100 + 900  # experts, the layer's projections, the head
    assert plan.mapped_bytes(moe_table_bytes()) == mapped
    assert plan.folder_tag().startswith("xm")


@pytest.mark.skipif(not kernel_enabled(), reason="the expert kernel is not built here")
def test_a_dense_file_moves_its_mlps_to_the_kernel_only_past_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", str(64 * GIB))  # not every matrix
    small = KernelPlan.for_table("qwen2", GIB, dense_table())
    assert small.dense_bytes == 0 and small.matrices == frozenset()
    assert small.kernel_for("blk.0.ffn_up.weight")[0] == "MatMulNBits"
    monkeypatch.setenv("HEARTH_DENSE_KERNEL_MIN_BYTES", str(GIB // 2))
    large = KernelPlan.for_table("qwen2", GIB, dense_table())
    assert large.dense_bytes == 2 * 3 * 300
    assert large.kernel_for("blk.1.ffn_up.weight")[0] == "HearthExperts"
    assert large.folder_tag().startswith("dm")
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "0")  # the switch wins over the size
    assert KernelPlan.for_table("qwen2", GIB, dense_table()).dense_bytes == 0
