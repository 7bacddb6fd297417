"""The kernel's worker pool (engine/kernels/pool.h): bit-identical output at any thread count
and any timing.

Each path of the matmul (a row dotted from its blocks, the decode-then-dot rows, the packed
GEMM, the integer K rows, float activations) and the routed experts run on 1, 2 and 3
threads, and on 2 with the pool's test hook holding its worker in every chunk it claims (a
worker descheduled while it holds work: the caller takes the rest, then waits for that
chunk). Every result must equal the one-thread result bit for bit. The matrices are over the
kernel's 1 MB threshold below which a call runs on one thread. No timing is asserted.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from gguf import GGMLQuantizationType

from engine.kernels import build
from engine.kernels.experts import ExpertSet, InputForm, matmul, routed_ffn
from tests.engine.kernels.test_expert_kernel import exact_activations, random_matrix

Q = GGMLQuantizationType
needs_kernel = pytest.mark.skipif(not build.available(), reason="no C compiler for the kernel")


@pytest.fixture
def late_worker() -> Iterator[None]:
    """The pool's worker 1 sleeps 300 us in every chunk it claims, for the test's length."""
    lib = build.library()
    assert lib is not None
    lib.hearth_pool_delay(1, 300)
    try:
        yield
    finally:
        lib.hearth_pool_delay(-1, 0)


def _runs(fn: object) -> list[np.ndarray]:
    assert callable(fn)
    return [fn(threads) for threads in (1, 2, 3, 2)]


@needs_kernel
@pytest.mark.parametrize("qt", [Q.Q8_0, Q.Q5_0, Q.Q4_1, Q.Q4_K, Q.Q6_K, Q.IQ4_XS, Q.Q3_K],
                         ids=lambda t: t.name)  # fmt: skip
@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_matmul_is_bit_identical_at_any_thread_count(qt: Q, n: int) -> None:
    rng = np.random.default_rng(int(qt) * 100 + n)
    m = random_matrix(rng, qt, 1, 1536, 1024)  # 0.6-1.7 MB of weights: past the threshold
    x = exact_activations(rng, n, 1024) + rng.standard_normal((n, 1024)).astype(np.float32)
    one = matmul(m, 0, x, threads=1)
    for got in _runs(lambda t: matmul(m, 0, x, threads=t)):
        np.testing.assert_array_equal(got, one)


@needs_kernel
@pytest.mark.parametrize("qt", [Q.Q8_0, Q.Q4_K], ids=lambda t: t.name)
@pytest.mark.parametrize("n", [1, 5, 40])
def test_a_late_worker_changes_no_bit(late_worker: None, qt: Q, n: int) -> None:
    rng = np.random.default_rng(int(qt) + n)
    m = random_matrix(rng, qt, 1, 2048, 1024)
    x = rng.standard_normal((n, 1024)).astype(np.float32)
    alone = matmul(m, 0, x, threads=1)
    for threads in (2, 3):
        np.testing.assert_array_equal(matmul(m, 0, x, threads=threads), alone)
        np.testing.assert_array_equal(matmul(m, 0, x, threads=threads, form="float"),
                                      matmul(m, 0, x, threads=1, form="float"))  # fmt: skip


@needs_kernel
@pytest.mark.parametrize("qt", [Q.Q4_K, Q.Q6_K, Q.Q8_0, Q.Q4_1], ids=lambda t: t.name)
def test_a_long_prefill_is_bit_identical(late_worker: None, qt: Q) -> None:
    """A prefill's rows past 256 K values (here 133 x 2,304) are quantized and re-laid for the
    GEMM on every thread (experts.c `quantize_rows`, kgemm.h `k_lay` / `q32_lay`), and a
    matrix wider than 2,048 runs its weight tiles in sets (`GEMM_TILE_SET`; 70 rows: a part
    set and a part tile): each row equals the one-thread call's and the row alone (a decode
    step), bit for bit; 133 rows end in a part group of 16 and of 4."""
    rng = np.random.default_rng(int(qt) + 133)
    m = random_matrix(rng, qt, 1, 70, 2304)
    x = rng.standard_normal((133, 2304)).astype(np.float32)
    one = matmul(m, 0, x, threads=1)
    for got in _runs(lambda t: matmul(m, 0, x, threads=t)):
        np.testing.assert_array_equal(got, one)
    for i in (0, 17, 131, 132):
        np.testing.assert_array_equal(matmul(m, 0, x[i : i + 1], threads=2)[0], one[i])


@needs_kernel
@pytest.mark.parametrize("form", ["float", "int8x2"])
def test_finer_activations_are_bit_identical(form: InputForm) -> None:
    """At any thread count, and each row as when it runs alone (a decode step against a
    verified draft's rows): int8 twice dots a call's 2n rows in one pass."""
    rng = np.random.default_rng(7)
    m = random_matrix(rng, Q.Q5_K, 1, 2048, 1024)
    x = rng.standard_normal((3, 1024)).astype(np.float32)
    one = matmul(m, 0, x, threads=1, form=form)
    for got in _runs(lambda t: matmul(m, 0, x, threads=t, form=form)):
        np.testing.assert_array_equal(got, one)
    for i in range(3):
        np.testing.assert_array_equal(matmul(m, 0, x[i : i + 1], threads=2, form=form)[0], one[i])


@needs_kernel
@pytest.mark.parametrize("rows", [1, 24])  # a decode step's experts in parallel; one's rows
def test_routed_experts_are_bit_identical(late_worker: None, rows: int) -> None:
    rng = np.random.default_rng(rows)
    experts, hidden, width, k = 8, 512, 768, 4
    ex = ExpertSet(
        gate=random_matrix(rng, Q.Q4_K, experts, width, hidden),
        up=random_matrix(rng, Q.Q4_K, experts, width, hidden),
        down=random_matrix(rng, Q.Q6_K, experts, hidden, width),
    )
    x = (rng.standard_normal((rows, hidden)) * 0.5).astype(np.float32)
    ids = np.stack([rng.choice(experts, k, replace=False) for _ in range(rows)])
    w = rng.dirichlet(np.ones(k), size=rows).astype(np.float32)
    one = routed_ffn(x, ids, w, ex, threads=1)
    for got in _runs(lambda t: routed_ffn(x, ids, w, ex, threads=t)):
        np.testing.assert_array_equal(got, one)
