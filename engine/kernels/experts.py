"""The routed experts of one MoE layer, computed from the GGUF's own quantized blocks.

Owns the data types that describe a layer's expert tensors (`QuantMatrix`, `ExpertSet`) and
`routed_ffn`: for each row, Σ over its k routed experts of weight · expert(x). The weights are
views of the mapped file, so nothing is repacked or copied and the experts cost the file's own
bytes in memory (ONNX Runtime's MatMulNBits needs ~1.65x that, prepacked at every open).
Does not own routing (top-k and softmax stay in the graph) or graph building.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Literal

import numpy as np

from engine.cpus import usable_cores
from engine.kernels import build

Activation = Literal["silu", "swiglu_oai", "gelu_tanh"]
ACTIVATIONS: dict[str, int] = {"silu": 0, "swiglu_oai": 1, "gelu_tanh": 2}
# How a projection's input meets the weights (common.h's IN_*): quantized to int8 (llama.cpp's
# q8_0 / q8_K), kept in float, or quantized to int8 twice, the value and then what the first
# grid left over (near the float form's error at about twice the int8 dots' cost).
InputForm = Literal["int8", "float", "int8x2"]
INPUT_FORMS: dict[InputForm, int] = {"int8": 0, "float": 1, "int8x2": 2}
ERRORS = {
    -1: "shapes, sizes or expert ids out of range",
    -2: "a weight type the kernel has no decoder for",
    -3: "out of memory",
}


class _HMat(ctypes.Structure):
    """common.h's HMat: the kernel reads no byte of ``data`` past experts × expert_bytes."""

    _fields_ = [("qtype", ctypes.c_int64), ("data", ctypes.c_void_p),
                ("expert_bytes", ctypes.c_int64), ("rows", ctypes.c_int64),
                ("cols", ctypes.c_int64), ("experts", ctypes.c_int64)]  # fmt: skip


class _HVec(ctypes.Structure):
    """common.h's HVec: a bias or scale and how many floats it holds."""

    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_int64)]


@dataclass(frozen=True)
class QuantMatrix:
    """E stacked matrices of ``rows`` outputs × ``cols`` inputs in ggml type ``qtype``.

    ``data`` is uint8 (E, bytes per expert), a view of the mapped file; row r of expert e
    is ``cols / block_size`` consecutive blocks.
    """

    qtype: int
    data: np.ndarray
    rows: int
    cols: int


@dataclass(frozen=True)
class ExpertSet:
    """One layer's experts: gate and up (or one fused gate_up: gate rows, then up rows), down.

    Biases are float32 (E, rows) or None (gpt-oss has them); ``out_scale`` is float32 (E,)
    or None (Gemma 4's per-expert output scale).
    """

    down: QuantMatrix
    gate: QuantMatrix | None = None
    up: QuantMatrix | None = None
    gate_up: QuantMatrix | None = None
    gate_bias: np.ndarray | None = None
    up_bias: np.ndarray | None = None
    down_bias: np.ndarray | None = None
    out_scale: np.ndarray | None = None
    activation: Activation = "silu"


def routed_ffn(
    x: np.ndarray,
    ids: np.ndarray,
    weights: np.ndarray,
    experts: ExpertSet,
    threads: int | None = None,
) -> np.ndarray:
    """(T, H) float32 rows, their (T, k) int64 expert ids and float32 weights → (T, H).

    Row t's output is Σ_j weights[t, j] · expert_{ids[t, j]}(x[t]). Runs the C kernel
    (`engine.kernels.build`) on ``threads`` threads (the physical cores when None); raises
    RuntimeError where the kernel is not available or refuses the input.
    """
    lib = build.library()
    if lib is None:
        raise RuntimeError(build.unavailable_reason() or "the expert kernel is not available")
    x = np.ascontiguousarray(x, dtype=np.float32)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    t, k = ids.shape
    if x.shape != (t, experts.down.rows) or weights.shape != (t, k):
        raise ValueError(f"routed_ffn: x {x.shape}, ids {ids.shape}, weights {weights.shape}")
    out = np.empty_like(x)
    gate = experts.gate_up if experts.gate_up is not None else experts.gate
    if gate is None:
        raise ValueError("routed_ffn: the experts have no gate (or gate_up) weights")
    keep, vecs = vectors(experts)
    mats = [_mat(gate), _mat(experts.up) if experts.gate_up is None else None, _mat(experts.down)]
    rc = lib.hearth_routed_ffn(
        _ptr(x), t, _ptr(ids), _ptr(weights), k, n_experts(experts),
        *(ctypes.byref(m) if m is not None else None for m in mats),
        *(ctypes.byref(v) if v is not None else None for v in vecs),
        ACTIVATIONS[experts.activation], threads or _cores(), _ptr(out),
    )  # fmt: skip
    del keep  # alive until here: the kernel read through the vectors' pointers
    if rc != 0:
        raise RuntimeError(f"the expert kernel failed: {ERRORS.get(rc, rc)}")
    return out


def matmul(
    m: QuantMatrix, expert: int, x: np.ndarray, threads: int | None = None, form: InputForm = "int8"
) -> np.ndarray:
    """Expert ``expert`` of ``m`` times each row of ``x`` (n, cols) → (n, rows), with the
    activations in ``form`` (`INPUT_FORMS`): quantized to 8 bits as `routed_ffn` does, kept
    in float, or quantized twice for inputs one int8 grid rounds too coarsely."""
    lib = build.library()
    if lib is None:
        raise RuntimeError(build.unavailable_reason() or "the expert kernel is not available")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] != m.cols or not 0 <= expert < m.data.shape[0]:
        raise ValueError(f"matmul: x {x.shape} against ({m.rows}, {m.cols}), expert {expert}")
    if form not in INPUT_FORMS:
        raise ValueError(f"matmul: input form {form!r} is not one of {', '.join(INPUT_FORMS)}")
    out = np.empty((x.shape[0], m.rows), np.float32)
    mat = _mat(m)
    assert mat is not None
    cores = threads or _cores()
    if form == "int8":
        rc = lib.hearth_matmul(ctypes.byref(mat), expert, _ptr(x), x.shape[0], _ptr(out), cores)
    else:
        rc = lib.hearth_matmul_float(ctypes.byref(mat), expert, _ptr(x), x.shape[0], _ptr(out),
                                     cores, INPUT_FORMS[form])  # fmt: skip
    if rc != 0:
        raise RuntimeError(f"the expert kernel failed: {ERRORS.get(rc, rc)}")
    return out


def supported(qtype: int) -> bool:
    """Whether the kernel decodes ggml type ``qtype`` (False where it is not available)."""
    lib = build.library()
    return lib is not None and bool(lib.hearth_supports(qtype))


def n_experts(experts: ExpertSet) -> int:
    """The experts a layer's ids may name: the down projection's count (the kernel refuses a
    layer whose other matrices, biases or scale hold fewer)."""
    return int(experts.down.data.shape[0])


def vectors(experts: ExpertSet) -> tuple[list[np.ndarray | None], list[_HVec | None]]:
    """The layer's biases and scale as float32 arrays (kept alive by the caller while the
    kernel may read them) and the kernel's views of them, each with its length."""
    extras = (experts.gate_bias, experts.up_bias, experts.down_bias, experts.out_scale)
    keep = [None if v is None else np.ascontiguousarray(v, dtype=np.float32) for v in extras]
    return keep, [None if v is None else _HVec(v.ctypes.data, v.size) for v in keep]


def _mat(m: QuantMatrix | None) -> _HMat | None:
    if m is None:
        return None
    data = m.data
    if data.dtype != np.uint8 or data.ndim != 2 or not data.flags.c_contiguous:
        raise ValueError("QuantMatrix.data must be C-contiguous uint8 (experts, bytes)")
    return _HMat(m.qtype, data.ctypes.data, data.shape[1], m.rows, m.cols, data.shape[0])


def _ptr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


def _cores() -> int:
    """The cores this process may use (`engine.cpus.usable_cores`)."""
    return usable_cores()
