"""The C expert kernel (engine.kernels) against gguf-py's dequantize, type by type.

Weights are random blocks with sane scales; activations are built so that their 8-bit
quantization is exact, so the matmul must equal the dequantized float product to float
rounding, on both of the kernel's paths (a row dotted straight from its blocks, and a row
decoded once for several activation rows). The whole expert feed-forward is compared with
the float reference (`engine.kernels.reference`) within the 8-bit activations' tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

from engine.kernels import build
from engine.kernels.experts import ExpertSet, QuantMatrix, matmul, routed_ffn, supported
from engine.kernels.reference import expert_matrix, routed_ffn_reference

Q = GGMLQuantizationType
TYPES = [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.MXFP4, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K,
         Q.IQ2_XXS, Q.IQ2_XS, Q.IQ2_S, Q.IQ3_XXS, Q.IQ3_S, Q.IQ4_NL, Q.IQ4_XS]  # fmt: skip

needs_kernel = pytest.mark.skipif(not build.available(), reason="no C compiler for the kernel")


def random_matrix(
    rng: np.random.Generator, qt: Q, experts: int, rows: int, cols: int
) -> QuantMatrix:
    """Random blocks of type ``qt`` whose float16 scales are small and finite."""
    block, nbytes = GGML_QUANT_SIZES[qt]
    n = rows * cols // block
    b = rng.integers(0, 256, size=(experts, n, nbytes), dtype=np.uint8)

    def f16(at: int) -> None:
        d = (rng.standard_normal((experts, n)) * 0.002).astype(np.float16)
        b[:, :, at : at + 2] = d.view(np.uint8).reshape(experts, n, 2)

    offsets = {Q.Q4_0: [0], Q.Q5_0: [0], Q.Q8_0: [0], Q.Q4_1: [0, 2], Q.Q5_1: [0, 2],
               Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.Q2_K: [80, 82],
               Q.Q3_K: [108], Q.IQ2_XXS: [0], Q.IQ2_XS: [0], Q.IQ2_S: [0], Q.IQ3_XXS: [0],
               Q.IQ3_S: [0], Q.IQ4_NL: [0], Q.IQ4_XS: [0]}  # fmt: skip
    for at in offsets.get(qt, []):
        f16(at)
    if qt == Q.MXFP4:
        b[:, :, 0] = rng.integers(118, 126, size=(experts, n))
    return QuantMatrix(int(qt), b.reshape(experts, -1), rows, cols)


def exact_activations(rng: np.random.Generator, n: int, cols: int) -> np.ndarray:
    """Rows whose 8-bit quantization is exact both per 32 and per 256 (the K-quants' dots):
    integers times one scale per 256, every 32 holding a 127."""
    q = rng.integers(-127, 128, size=(n, cols // 256, 8, 32)).astype(np.float32)
    q[..., 0] = 127.0  # every 32's largest magnitude is 127 steps
    scale = rng.uniform(0.01, 0.1, size=(n, cols // 256, 1, 1)).astype(np.float32)
    return (q * scale).reshape(n, cols)


@needs_kernel
@pytest.mark.parametrize("qt", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("n", [1, 5], ids=["fused", "decoded"])
def test_matmul_equals_dequantized_product(qt: Q, n: int) -> None:
    rng = np.random.default_rng(int(qt) * 10 + n)
    m = random_matrix(rng, qt, 3, 96, 512)
    x = exact_activations(rng, n, 512)
    for e in range(3):
        want = x.astype(np.float64) @ expert_matrix(m, e).astype(np.float64).T
        got = matmul(m, e, x, threads=2)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())


@needs_kernel
@pytest.mark.parametrize(
    ("qt", "fused", "activation", "extras"),
    [
        (Q.Q4_K, False, "silu", False),
        (Q.Q6_K, True, "silu", False),
        (Q.MXFP4, False, "swiglu_oai", True),
        (Q.Q8_0, True, "gelu_tanh", True),
    ],
)
def test_routed_ffn_matches_float_reference(
    qt: Q, fused: bool, activation: str, extras: bool
) -> None:
    rng = np.random.default_rng(7)
    e_count, hidden, width, rows, k = 8, 512, 256, 6, 3
    mats = {"down": random_matrix(rng, qt, e_count, hidden, width)}
    if fused:
        mats["gate_up"] = random_matrix(rng, qt, e_count, 2 * width, hidden)
    else:
        mats["gate"] = random_matrix(rng, qt, e_count, width, hidden)
        mats["up"] = random_matrix(rng, qt, e_count, width, hidden)
    more = {}
    if extras:
        more = {
            "gate_bias": rng.standard_normal((e_count, width)).astype(np.float32) * 0.1,
            "up_bias": rng.standard_normal((e_count, width)).astype(np.float32) * 0.1,
            "down_bias": rng.standard_normal((e_count, hidden)).astype(np.float32) * 0.1,
            "out_scale": rng.uniform(0.5, 2.0, e_count).astype(np.float32),
        }
    ex = ExpertSet(activation=activation, **mats, **more)  # type: ignore[arg-type]
    x = (rng.standard_normal((rows, hidden)) * 0.5).astype(np.float32)
    ids = np.stack([rng.choice(e_count, k, replace=False) for _ in range(rows)])
    w = rng.dirichlet(np.ones(k), size=rows).astype(np.float32)
    got = routed_ffn(x, ids, w, ex, threads=2)
    want = routed_ffn_reference(x, ids, w, ex)
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert rel < 0.03, rel
    for t in range(rows):  # every row, not only the total
        cos = float(got[t] @ want[t] / np.linalg.norm(got[t]) / np.linalg.norm(want[t]))
        assert cos > 0.999, (t, cos)


@needs_kernel
def test_bad_input_is_refused_with_a_reason() -> None:
    rng = np.random.default_rng(1)
    ex = ExpertSet(
        down=random_matrix(rng, Q.Q8_0, 4, 64, 64),
        gate=random_matrix(rng, Q.Q8_0, 4, 64, 64),
        up=random_matrix(rng, Q.Q8_0, 4, 64, 64),
    )
    x = np.ones((1, 64), np.float32)
    with pytest.raises(RuntimeError, match="out of range"):
        routed_ffn(x, np.array([[4]]), np.ones((1, 1), np.float32), ex)
    short = QuantMatrix(int(Q.Q4_K), np.zeros((4, 64 * 144), np.uint8), 64, 128)
    with pytest.raises(RuntimeError, match="out of range"):  # 128 inputs: half a Q4_K block
        routed_ffn(
            x,
            np.array([[0]]),
            np.ones((1, 1), np.float32),
            ExpertSet(down=short, gate=ex.gate, up=ex.up),
        )
    with pytest.raises(ValueError, match="routed_ffn"):
        routed_ffn(np.ones((2, 64), np.float32), np.array([[0]]), np.ones((1, 1), np.float32), ex)
    assert supported(int(Q.Q4_K)) and not supported(int(Q.IQ1_S))
    q2 = QuantMatrix(int(Q.IQ1_S), np.zeros((1, 50), np.uint8), 1, 256)
    with pytest.raises(RuntimeError, match="no decoder"):
        matmul(q2, 0, np.ones((1, 256), np.float32))


@needs_kernel
def test_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_EXPERT_KERNEL", "0")
    build.library.cache_clear()
    build._reason.clear()
    try:
        assert not build.available()
        assert "HEARTH_EXPERT_KERNEL=0" in (build.unavailable_reason() or "")
    finally:
        monkeypatch.delenv("HEARTH_EXPERT_KERNEL")
        build.library.cache_clear()
        build._reason.clear()
    assert build.available()


@needs_kernel
@pytest.mark.parametrize("qt", TYPES, ids=lambda t: t.name)
def test_a_row_does_not_depend_on_the_rows_beside_it(qt: Q) -> None:
    """Bitwise: one row alone (a decode step: dotted from the blocks), among 2 and among 7
    (a prefill: decoded once, four rows at a time, then a tail), so batched and single steps
    of one sequence agree exactly (the server batches MoE rows on this)."""
    rng = np.random.default_rng(int(qt))
    m = random_matrix(rng, qt, 1, 64, 512)
    x = (rng.standard_normal((7, 512)) * 0.3).astype(np.float32)
    alone = np.concatenate([matmul(m, 0, x[i : i + 1]) for i in range(7)])
    np.testing.assert_array_equal(matmul(m, 0, x[:2]), alone[:2])
    np.testing.assert_array_equal(matmul(m, 0, x), alone)


def test_the_kernel_builds_wherever_a_compiler_is() -> None:
    """Every other test here skips without the kernel: a compile error must not pass as a
    machine without a compiler."""
    import shutil

    if shutil.which("cc") or shutil.which("gcc"):
        assert build.available(), build.unavailable_reason()


FUSED_MAX_ROWS = 3  # experts.c: at most this many rows take the decode step's path


@needs_kernel
@pytest.mark.parametrize("qt", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize(
    ("rows", "cols", "n"),
    [(70, 768, 37), (6, 4096, 70), (9, 160, 5), (37, 2304, 21)],
    # a part tile and a part group of rows; rows past a ~512 KB chunk; a width that is not
    # whole 128s (Q4_1 and Q5_1's offsets then have a tail: they keep the decoded-row path);
    # past 2,048 wide, tiles in sets (kgemm.h GEMM_TILE_SET), the last set and tile in part
    ids=["tiles", "chunks", "narrow", "sets"],
)
def test_prefill_equals_the_decode_step(qt: Q, rows: int, cols: int, n: int) -> None:
    """A prefill (n > FUSED_MAX_ROWS: the blocked GEMM where the machine has one) gives each
    row bit for bit what a decode step (that row alone) gives, and both equal gguf-py's
    dequantized product to float rounding (activations whose 8-bit quantization is exact)."""
    assert n > FUSED_MAX_ROWS
    if cols % GGML_QUANT_SIZES[qt][0]:
        pytest.skip(f"{qt.name} rows are whole {GGML_QUANT_SIZES[qt][0]}-blocks")
    rng = np.random.default_rng(int(qt) * 100 + cols)
    m = random_matrix(rng, qt, 1, rows, cols)
    x = exact_activations(rng, n, -(-cols // 256) * 256)[:, :cols]
    prefill = matmul(m, 0, x, threads=2)
    for i in range(n):
        np.testing.assert_array_equal(prefill[i], matmul(m, 0, x[i : i + 1], threads=2)[0])
    want = x.astype(np.float64) @ expert_matrix(m, 0).astype(np.float64).T
    np.testing.assert_allclose(prefill, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())


@needs_kernel
@pytest.mark.parametrize("qt", [Q.Q4_1, Q.Q5_1], ids=lambda t: t.name)
@pytest.mark.parametrize("cols", [192, 224, 576, 608])
def test_offsets_tails_round_alike_on_every_path(qt: Q, cols: int) -> None:
    """Q4_1 and Q5_1 rows whose 16-groups leave a tail of 4 or 6 after the whole eights (6,
    7, 18 and 19 blocks; the bundled SmolLM2 is 576 wide): the decoded rows of a prefill sum
    that tail as the decode step does, bit for bit (GCC once fused one loop's steps and not
    the other's)."""
    rng = np.random.default_rng(cols)
    m = random_matrix(rng, qt, 1, 40, cols)
    x = (rng.standard_normal((5, cols)) * 0.3).astype(np.float32)
    alone = np.concatenate([matmul(m, 0, x[i : i + 1]) for i in range(5)])
    np.testing.assert_array_equal(matmul(m, 0, x), alone)


FUSED_MANY = 9  # frows.h: up to this many rows are dotted from the blocks in one pass


@needs_kernel
@pytest.mark.parametrize("qt", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("cols", [256, 896, 4864], ids=["256", "896", "4864"])
def test_every_row_of_a_verify_equals_the_row_alone(qt: Q, cols: int) -> None:
    """Bitwise: each row of an n-row call (n = 1..FUSED_MANY + 1: a speculative verify of
    1 + k rows, each type's many-row fused dot where it has one) equals that row's single-row
    call, at the real files' widths (896: Qwen2.5-0.5B's 32-block matrices, 4864: its K-quant
    down projections), so a drafted token's logits are the plain step's."""
    if cols % GGML_QUANT_SIZES[qt][0]:
        pytest.skip(f"{qt.name} rows are whole {GGML_QUANT_SIZES[qt][0]}-blocks")
    rng = np.random.default_rng(int(qt) * 7 + cols)
    m = random_matrix(rng, qt, 1, 37, cols)
    x = (rng.standard_normal((FUSED_MANY + 1, cols)) * 0.3).astype(np.float32)
    alone = np.concatenate([matmul(m, 0, x[i : i + 1], threads=2) for i in range(len(x))])
    for n in range(1, FUSED_MANY + 2):
        np.testing.assert_array_equal(matmul(m, 0, x[:n], threads=2), alone[:n], err_msg=f"n={n}")
