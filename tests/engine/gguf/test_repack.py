"""engine.gguf.repack: repacked weights equal gguf-py's dequantize, and ORT reads them so.

The reference is always gguf-py (`gguf.quants.dequantize`) on random block bytes; the layout
test runs a real one-node `MatMulNBits` graph in onnxruntime.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.errors import CorruptModelError, UnsupportedModelError
from engine.gguf import repack as rp

gguf = pytest.importorskip("gguf")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

N, K = 8, 512
# Byte offsets of the f16 scale fields in each block (ggml's block_* structs); every other
# byte is a random code or packed sub-scale.
F16_FIELDS = {
    "Q4_0": [0],
    "Q4_1": [0, 2],
    "Q5_0": [0],
    "Q5_1": [0, 2],
    "Q8_0": [0],
    "Q2_K": [80, 82],
    "Q3_K": [108],
    "Q4_K": [0, 2],
    "Q5_K": [0, 2],
    "Q6_K": [208],
    "IQ4_NL": [0],
    "IQ4_XS": [0],
    "IQ2_XXS": [0],
    "IQ2_XS": [0],
    "IQ2_S": [0],
    "IQ3_XXS": [0],
    "IQ3_S": [0],
    "IQ1_S": [0],
    "MXFP4": [],
}
# MXFP4's scale is one e8m0 byte, 2^(e - 128): kept within float32's finite range.
E8M0_FIELDS = {"MXFP4": [0]}
EXACT = sorted(rp.SUPPORTED)


def qtype(kind: str) -> Any:
    return gguf.GGMLQuantizationType[kind]


def random_f16(
    rng: np.random.Generator, shape: tuple[int, ...], lo: float, hi: float
) -> np.ndarray:
    """Finite f16 values with magnitudes log-uniform in [lo, hi] and random signs."""
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi), shape))
    return (mag * rng.choice([-1.0, 1.0], shape)).astype(np.float16)


def random_raw(
    kind: str, seed: int = 0, n: int = N, k: int = K, lo: float = 1e-3, hi: float = 1e-1
) -> np.ndarray:
    """A read-only (n, bytes per row) uint8 tensor of random `kind` blocks."""
    rng = np.random.default_rng(seed)
    if kind == "F32":
        raw = rng.standard_normal((n, k)).astype(np.float32).view(np.uint8)
    elif kind in ("F16", "BF16"):
        bits = rng.standard_normal((n, k)).astype(np.float32).view(np.uint32) >> 16
        raw = bits.astype(np.uint16) if kind == "BF16" else random_f16(rng, (n, k), lo, hi)
        raw = raw.view(np.uint8)
    else:
        qk, type_size = gguf.GGML_QUANT_SIZES[qtype(kind)]
        raw = rng.integers(0, 256, (n, k // qk, type_size), dtype=np.uint8)
        for at in F16_FIELDS[kind]:
            raw[..., at : at + 2] = random_f16(rng, (n, k // qk, 1), lo, hi).view(np.uint8)
        for at in E8M0_FIELDS.get(kind, []):
            raw[..., at] = rng.integers(128 + np.log2(lo), 128 + np.log2(hi), (n, k // qk))
        raw = raw.reshape(n, -1)
    raw.flags.writeable = False  # repack must never write to the (memmapped) file bytes
    return raw


def reference(kind: str, raw: np.ndarray) -> np.ndarray:
    ref = gguf.quants.dequantize(raw, qtype(kind)).reshape(raw.shape[0], -1)
    assert np.isfinite(ref).all()  # the f16 fields above are the real scale fields
    return ref


# ---------------------------------------------------------------- 1. bit for bit


@pytest.mark.parametrize("kind", EXACT)
def test_decode_equals_gguf_dequantize_bit_for_bit(kind: str) -> None:
    raw = random_raw(kind)
    packed = rp.repack(qtype(kind), raw, N, K, "blk.0.w")
    got = rp.decode(packed)
    assert got.dtype == np.float32 and got.shape == (N, K)
    np.testing.assert_array_equal(got.view(np.uint32), reference(kind, raw).view(np.uint32))


@pytest.mark.parametrize("kind", sorted(rp.SUPPORTED - {"F32", "F16", "BF16"}))
def test_packed_arrays_have_the_matmulnbits_shapes(kind: str) -> None:
    p = rp.repack(qtype(kind), random_raw(kind), N, K)
    assert p.bits in (4, 8) and p.block in (16, 32) and p.dense is None
    assert p.codes is not None and p.scales is not None
    assert p.codes.dtype == np.uint8 and p.codes.shape == (N, K // p.block, p.block * p.bits // 8)
    assert p.scales.dtype == np.float32 and p.scales.shape == (N, K // p.block)
    assert p.offsets is None or (p.offsets.dtype, p.offsets.shape) == (np.float32, p.scales.shape)


@pytest.mark.parametrize("kind", ["Q4_1", "Q4_K"])
def test_minimum_formats_stay_exact_for_any_scale_range(kind: str) -> None:
    """Q4_1/Q4_K keep their minima as offsets with an explicit zero point 0, so nothing is
    folded into a float32 sum: exact even when d and m are 20 binades apart."""
    raw = random_raw(kind, seed=1, lo=1e-7, hi=1e2)
    got = rp.decode(rp.repack(qtype(kind), raw, N, K))
    np.testing.assert_array_equal(got.view(np.uint32), reference(kind, raw).view(np.uint32))


def test_raw_may_be_a_typed_array_or_a_read_only_memmap(tmp_path: Path) -> None:
    raw = random_raw("Q6_K")
    path = tmp_path / "w.bin"
    raw.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", shape=raw.shape)
    want = rp.decode(rp.repack(qtype("Q6_K"), raw, N, K))
    np.testing.assert_array_equal(rp.decode(rp.repack(qtype("Q6_K"), mapped, N, K)), want)
    halves = random_raw("F16").view(np.float16).reshape(N, K)  # GGUFReader's F16 tensor.data
    np.testing.assert_array_equal(rp.repack(qtype("F16"), halves, N, K).dense, halves)


# ---------------------------------------------------------------- 2. what ORT reads


def run_matmulnbits(p: rp.Packed, x: np.ndarray, accuracy: int = 0) -> np.ndarray:
    """x (1, S, K) through one MatMulNBits node (float compute; ``accuracy`` 4: int8
    activations) plus the offsets correction."""
    from onnx import TensorProto, helper, numpy_helper

    assert p.codes is not None and p.scales is not None
    inits = [numpy_helper.from_array(p.codes, "B"), numpy_helper.from_array(p.scales, "scales")]
    inputs = ["x", "B", "scales"]
    zero_points = rp.zero_points_input(p)
    if zero_points is not None:
        inits.append(numpy_helper.from_array(zero_points, "zp"))
        inputs.append("zp")
    nodes = [
        helper.make_node(
            "MatMulNBits", inputs, ["y0" if p.offsets is not None else "y"],
            domain="com.microsoft", K=p.k, N=p.n, bits=p.bits, block_size=p.block,
            accuracy_level=accuracy,
        )
    ]  # fmt: skip
    if p.offsets is not None:
        shape = np.array([1, -1, p.k // p.block, p.block], dtype=np.int64)
        inits += [
            numpy_helper.from_array(shape, "shape"),
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis"),
            numpy_helper.from_array(np.ascontiguousarray(p.offsets.T), "offsetsT"),
        ]
        nodes += [
            helper.make_node("Reshape", ["x", "shape"], ["xb"]),
            helper.make_node("ReduceSum", ["xb", "axis"], ["bsum"], keepdims=0),
            helper.make_node("MatMul", ["bsum", "offsetsT"], ["corr"]),
            helper.make_node("Add", ["y0", "corr"], ["y"]),
        ]
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "repack", [helper.make_tensor_value_info("x", f32, [1, None, p.k])],
        [helper.make_tensor_value_info("y", f32, [1, None, p.n])], inits,
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    return session.run(["y"], {"x": x})[0]


# One type per (bits, block, offsets) combination.
LAYOUTS = ["Q4_0", "Q4_1", "Q4_K", "Q3_K", "Q2_K", "Q8_0", "Q5_K", "Q6_K"]


@pytest.mark.parametrize("kind", LAYOUTS)
def test_onnxruntime_reads_the_repacked_layout(kind: str) -> None:
    raw = random_raw(kind, seed=2)
    packed = rp.repack(qtype(kind), raw, N, K)
    x = np.random.default_rng(3).standard_normal((1, 3, K)).astype(np.float32)
    want = x.astype(np.float64) @ reference(kind, raw).T.astype(np.float64)  # (1, 3, N)
    error = lambda p: np.abs(run_matmulnbits(p, x) - want).max() / np.abs(want).max()  # noqa: E731
    assert error(packed) < 1e-4
    if packed.bits == 4:  # the check can tell: the other nibble order reads other weights
        assert packed.codes is not None
        swapped = (packed.codes >> 4) | (packed.codes << 4)
        assert error(replace(packed, codes=swapped)) > 1e-2


# ---------------------------------------------------------------- 3. refusals


def test_unsupported_type_names_tensor_and_type() -> None:
    raw = random_raw("IQ1_S")
    with pytest.raises(rp.UnsupportedQuantError) as info:
        rp.repack(qtype("IQ1_S"), raw, N, K, "blk.0.attn_q.weight")
    message = str(info.value)
    assert "blk.0.attn_q.weight" in message and "IQ1_S" in message and "Q4_K" in message
    assert isinstance(info.value, UnsupportedModelError)
    assert not rp.fast_path_supports(qtype("IQ1_S")) and rp.fast_path_supports(qtype("Q4_K"))
    with pytest.raises(rp.UnsupportedQuantError, match="IQ1_S"):
        rp.packed_nbytes(qtype("IQ1_S"), N, K)


@pytest.mark.parametrize(("kind", "k", "qk"), [("Q4_K", 384, 256), ("Q4_0", 48, 32)])
def test_k_off_the_block_grid_is_refused(kind: str, k: int, qk: int) -> None:
    type_size = gguf.GGML_QUANT_SIZES[qtype(kind)][1]
    raw = np.zeros(N * type_size * (k // qk + 1), dtype=np.uint8)
    with pytest.raises(rp.UnsupportedQuantError, match=rf"output\.weight.*K={k}.*{qk}"):
        rp.repack(qtype(kind), raw, N, k, "output.weight")


def test_wrong_byte_count_is_corrupt() -> None:
    raw = random_raw("Q8_0")[:, :-34]
    with pytest.raises(CorruptModelError, match=r"token_embd\.weight"):
        rp.repack(qtype("Q8_0"), raw, N, K, "token_embd.weight")


# ---------------------------------------------------------------- 4. rows and sizes


@pytest.mark.parametrize("kind", [*sorted(rp.SUPPORTED), "IQ1_S"])
def test_dequantize_rows_equals_those_rows_of_the_full_dequantize(kind: str) -> None:
    raw = np.array(random_raw(kind))
    rows = np.array([5, 0, 5, 7])
    others = np.setdiff1d(np.arange(N), rows)
    full = reference(kind, raw)
    raw[others] = 0xFF  # garbage (NaN scales) in rows nobody asked for changes nothing
    got = rp.dequantize_rows(qtype(kind), raw, N, K, rows)
    assert got.dtype == np.float32 and got.shape == (len(rows), K)
    np.testing.assert_array_equal(got.view(np.uint32), full[rows].view(np.uint32))


@pytest.mark.parametrize("kind", sorted(rp.SUPPORTED))
def test_packed_nbytes_predicts_repack(kind: str) -> None:
    packed = rp.repack(qtype(kind), random_raw(kind), N, K)
    assert rp.packed_nbytes(qtype(kind), N, K) == packed.nbytes > 0
    assert rp.resident_nbytes(qtype(kind), N, K) == packed.resident_nbytes >= packed.nbytes
