"""The routed experts of one MoE layer, computed from the GGUF's own quantized blocks.

Owns the data types that describe a layer's expert tensors (`QuantMatrix`, `ExpertSet`) and
`routed_ffn`: for each row, Σ over its k routed experts of weight · expert(x). The weights are
views of the mapped file, so nothing is repacked or copied and the experts cost the file's own
bytes in memory (ONNX Runtime's MatMulNBits needs ~1.65x that, prepacked at every open).
Does not own routing (top-k and softmax stay in the graph) or graph building.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Activation = Literal["silu", "swiglu_oai", "gelu_tanh"]


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
    x: np.ndarray, ids: np.ndarray, weights: np.ndarray, experts: ExpertSet
) -> np.ndarray:
    """(T, H) float32 rows, their (T, k) int64 expert ids and float32 weights → (T, H).

    Row t's output is Σ_j weights[t, j] · expert_{ids[t, j]}(x[t]).
    """
    from engine.kernels.reference import routed_ffn_reference  # until the C kernel lands

    return routed_ffn_reference(x, ids, weights, experts)
