"""The kernel plan (`engine.fastpath.plan.KernelPlan`): one decision per tensor, with its reason,
that the graph's folder name, the conversion and the memory estimate all read.

Tensor tables are written here (names, ggml types, byte counts: no weights needed); the
switches are the real environment variables.
"""

from __future__ import annotations

import pytest

from engine.fastpath import plan
from engine.fastpath.plan import KernelPlan, kernel_enabled
from engine.kernels import native

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


def head_heavy_table(head: int, rest: int) -> list[tuple[str, int, int]]:
    """A tied-head file (no output.weight): a ``head``-byte embedding, ``rest`` bytes of layers."""
    table = [(n, t, b) for n, t, b in dense_table() if n != "output.weight"]
    table[0] = ("token_embd.weight", Q8_0, head)
    return [*table, ("blk.0.ffn_up.weight", Q4_K, rest)]


@pytest.mark.skipif(not native.serves(), reason="the native kernel ops do not serve here")
def test_a_small_file_with_a_big_head_runs_every_matrix_on_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HEARTH_KERNEL_MIN_BYTES", raising=False)
    monkeypatch.delenv("HEARTH_MATRIX_KERNEL", raising=False)
    mb = 1 << 20
    monkeypatch.setattr(plan, "_last_level_cache", lambda: 32 * mb)  # this machine's AMD EPYC
    # Gemma 3 270M's shape: 253 MB, a 178 MB Q8_0 head it streams every step.
    gemma = KernelPlan.for_table("gemma3", 253 * mb, head_heavy_table(178 * mb, 75 * mb))
    assert gemma.every and "token_embd.weight" in gemma.matrices
    assert gemma.kernel_for("blk.0.ffn_up.weight")[0] == "HearthMatMul"
    assert "M" in gemma.folder_tag()
    # The bundled SmolLM2's shape: 98 MB, a 30 MB head: past 64 MB, so every matrix by size.
    smol = KernelPlan.for_table("llama", 98 * mb, head_heavy_table(30 * mb, 68 * mb))
    assert smol.every and "M" in smol.folder_tag()
    # Below 64 MB a file whose head is not most of it stays on MatMulNBits...
    small = KernelPlan.for_table("llama", 60 * mb, head_heavy_table(20 * mb, 40 * mb))
    assert not small.every and small.matrices == frozenset()
    # ... and so does one whose head is most of it but fits the cache twice over.
    cached = KernelPlan.for_table("gemma3", 60 * mb, head_heavy_table(40 * mb, 20 * mb))
    assert not cached.every
    # A set HEARTH_KERNEL_MIN_BYTES is the only rule.
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", str(300 * mb))
    assert not KernelPlan.for_table("gemma3", 253 * mb, head_heavy_table(178 * mb, 75 * mb)).every
