"""The fast path's output head: final norm, the projection to the vocabulary, soft-capping.

Owns `output_head` and `row_slices`: the head runs as consecutive row slices of at most
``HEAD_SLICE_BYTES`` of codes, concatenated. Does not own the rest of the graph
(`engine.fastpath.graph`, whose `GraphBuilder` it builds with).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.fastpath.matmul_op import kernel_projection

if TYPE_CHECKING:
    from engine.arch.hparams import HParams
    from engine.fastpath.builder import GraphBuilder

# ONNX Runtime maps a weight's codes, prepacks them, then unmaps them, one MatMulNBits after
# another, the head last, when the rest is packed: its codes (129 MB for a 151k vocabulary at
# width 896) sat on top of everything at the open's peak. In slices, one slice's codes do: the
# last 32 MB slice still stood 27 MB above the open's end (0.5B, 151k vocabulary); 8 MB slices
# cost no measurable decode time (17 instead of 5 MatMulNBits: 63.7 vs 62.9 CPU ms/token).
# No GRAPH_VERSION bump: a graph converted with 32 MB slices computes the same logits.
HEAD_SLICE_BYTES = 8 << 20
SLICE_ALIGN = 64  # rows; slices starting off MLAS's tiles changed the last bits of ~3% of logits


def output_head(g: GraphBuilder, hp: HParams, hidden: str, pending: str | None) -> str:
    """Final norm and output head over the rows from ``logits_start`` on (prefill: the last)."""
    end, axis = g.const("end", np.array([2**62])), g.const("axis", np.array([1]))
    last = g.op("Slice", [hidden, "logits_start", end, axis])
    last_pending = g.op("Slice", [pending, "logits_start", end, axis]) if pending else None
    _, normed = g.add_norm(last, last_pending, "output_norm.weight", hp.rms_eps)
    head = "output.weight" if g.has("output.weight") else "token_embd.weight"

    logits = kernel_projection(g, normed, [head], "head")  # the mapped file's own blocks
    if logits is None:
        parts = [g.linear(normed, w, "head") for w in row_slices(g.packed(head), HEAD_SLICE_BYTES)]
        logits = parts[0] if len(parts) == 1 else g.op("Concat", parts, "head", axis=-1)
    if hp.logit_scale:  # granite divides the logits
        logits = g.op("Div", [logits, g.const("scale", np.array(hp.logit_scale, np.float32))])
    if hp.final_softcap:
        cap = g.const("cap", np.array(hp.final_softcap, np.float32))
        logits = g.op("Mul", [g.op("Tanh", [g.op("Div", [logits, cap])]), cap])
    return logits


def row_slices(w: Any, max_bytes: int) -> list[Any]:
    """``w`` (a `Packed`) as consecutive row slices whose codes are at most ``max_bytes`` each
    (one slice: ``w`` itself). Each output row depends on its own row of weights only, so the
    concatenated outputs equal the whole matrix's."""
    codes = w.codes if w.bits else w.dense
    count = -(-codes.nbytes // max_bytes)
    if count <= 1:
        return [w]
    step = -(-w.n // count // SLICE_ALIGN) * SLICE_ALIGN  # MLAS computes rows in aligned tiles
    return [_rows(w, start, min(start + step, w.n)) for start in range(0, w.n, step)]


def _rows(w: Any, start: int, stop: int) -> Any:
    def cut(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[start:stop]

    return replace(
        w, n=stop - start, codes=cut(w.codes), scales=cut(w.scales), offsets=cut(w.offsets),
        dense=cut(w.dense), zero_points=cut(w.zero_points),
    )  # fmt: skip
