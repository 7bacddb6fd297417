"""The multi-token-prediction (MTP) block a converted Qwen3.5 GGUF appends after its layers.

Owns reading it: llama.cpp's converter writes ``<arch>.nextn_predict_layers = 1`` and one more
block, ``blk.{n_layers}``, holding a gated full-attention decoder layer (``attn_norm``,
``attn_q`` with each head's query then its output gate, ``attn_q_norm``/``attn_k_norm``,
``attn_k``, ``attn_v``, ``attn_output``, ``post_attention_norm``, ``ffn_gate/up/down``) and
its input fusion: ``nextn.enorm`` (on the next token's embedding), ``nextn.hnorm`` (on the
model's residual stream at the current position), ``nextn.eh_proj`` (2·hidden → hidden, the
embedding's half first, as transformers' ``torch.cat([embeds, hidden])``), and
``nextn.shared_head_norm`` before the model's own output head (Qwen3.5 writes neither
``nextn.embed_tokens`` nor ``nextn.shared_head_head``; where a file has them they are used).
Norm weights are stored with Qwen's +1 already added, as the model's own.

Each matrix is an `engine.kernels.experts.QuantMatrix` over the mapped file's blocks (the
kernel's matmul reads them in place: the head costs no copy), or, where the kernel cannot
decode its type or is not built, a float32 array. Does not own the forward
(`engine.mtp.drafter`) or the main model's graph.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.cpus import usable_cores
from engine.kernels.experts import QuantMatrix, matmul, supported

MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
NORMS = ("attn_norm", "attn_q_norm", "attn_k_norm", "post_attention_norm")
# A float32 copy of a matrix the kernel cannot read is refused past this many weights (a
# 248k-vocabulary head would take a gigabyte).
MAX_DENSE_WEIGHTS = 64 << 20


@dataclass(frozen=True)
class Matrix:
    """rows × cols weights: the file's blocks for the kernel, or float32 (rows, cols)."""

    rows: int
    cols: int
    quant: QuantMatrix | None = None
    dense: np.ndarray | None = None

    def first_rows(self, n: int) -> Matrix:
        """The first ``n`` output rows (a GGUF row is whole blocks, rows lie in order)."""
        n = min(n, self.rows)
        if self.quant is not None:
            width = self.quant.data.shape[1] // self.rows
            part = QuantMatrix(self.quant.qtype, self.quant.data[:, : n * width], n, self.cols)
            return Matrix(n, self.cols, quant=part)
        assert self.dense is not None
        return Matrix(n, self.cols, dense=self.dense[:n])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x (n, cols) → (n, rows)."""
        if self.quant is not None:
            return matmul(self.quant, 0, x, threads=_cores())
        assert self.dense is not None
        return np.asarray(np.asarray(x, np.float32) @ self.dense.T, np.float32)


@dataclass(frozen=True)
class MtpBlock:
    """The block's weights, by their GGUF names without the ``blk.{n}.`` prefix."""

    layer: int  # its block index (the model's layer count)
    matrices: dict[str, Matrix]  # MATRICES, "eh_proj" and "head"
    norms: dict[str, np.ndarray]  # NORMS, "enorm", "hnorm" and "head_norm"


def has_mtp_block(reader: Any, hp: HParams) -> bool:
    """Whether ``reader``'s file carries an MTP block after its ``hp.n_layers`` layers."""
    names = {t.name for t in reader.tensors}
    return f"blk.{hp.n_layers}.nextn.eh_proj.weight" in names


def read_mtp_block(reader: Any, hp: HParams, draft_vocab: int = 0) -> MtpBlock | None:
    """The MTP block of ``reader``'s file (a `gguf.GGUFReader`), or None where it has none or
    a matrix neither the kernel nor a bounded float copy can hold. ``draft_vocab`` > 0: the
    head keeps only the first that many token ids (see `engine.mtp.drafter.DRAFT_VOCAB`)."""
    if not hp.spec.hybrid or not has_mtp_block(reader, hp):
        return None
    tensors = {t.name: t for t in reader.tensors}
    p = f"blk.{hp.n_layers}."
    names = {n: p + n + ".weight" for n in MATRICES} | {"eh_proj": p + "nextn.eh_proj.weight"}
    own_head = p + "nextn.shared_head_head.weight"
    names["head"] = next(
        n for n in (own_head, "output.weight", "token_embd.weight") if n in tensors
    )
    matrices = {}
    for key, name in names.items():
        m = _matrix(tensors[name])
        if m is None:
            return None
        matrices[key] = m.first_rows(draft_vocab) if key == "head" and draft_vocab > 0 else m
    norm_names = {n: p + n + ".weight" for n in NORMS} | {
        "enorm": p + "nextn.enorm.weight",
        "hnorm": p + "nextn.hnorm.weight",
        "head_norm": p + "nextn.shared_head_norm.weight",
    }
    if norm_names["head_norm"] not in tensors:
        norm_names["head_norm"] = "output_norm.weight"
    norms = {key: _dense(tensors[name]).reshape(-1) for key, name in norm_names.items()}
    return MtpBlock(hp.n_layers, matrices, norms)


def _matrix(t: Any) -> Matrix | None:
    cols, rows = (int(x) for x in t.shape)  # GGUF lists the input dimension first
    qtype = int(t.tensor_type)
    if supported(qtype):
        data = np.asarray(t.data).reshape(-1).view(np.uint8).reshape(1, -1)
        return Matrix(rows, cols, quant=QuantMatrix(qtype, data, rows, cols))
    if rows * cols > MAX_DENSE_WEIGHTS:
        return None
    return Matrix(rows, cols, dense=_dense(t).reshape(rows, cols))


@functools.cache
def _cores() -> int:
    """The cores this process may use (`engine.cpus.usable_cores`, itself asked once)."""
    return usable_cores()


def _dense(t: Any) -> np.ndarray:
    from gguf.quants import dequantize

    return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
