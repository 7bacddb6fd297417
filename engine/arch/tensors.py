"""The tensors each architecture needs, and the check of a file against them.

Owns `expected_tensors` (from an architecture's description, `engine.arch.ArchSpec`, and the
file's hyper-parameters, `HParams`: every tensor a layer needs, its shape and whether it may
be absent) and `check_tensors`, which refuses a file whose tensors disagree with it, naming
the first tensor that does: one missing, or of another shape (and so of another byte size:
the reader derives bytes from shape and type, and checks they lie inside the file). As
llama.cpp's loader does (``llama_model_loader::check_tensor_dims``, called from each
architecture's ``create_tensor`` list in llama-model.cpp), with no guessing from other layers:
- a file declaring 3 layers but holding 2 ran with random weights;
- a valid Gemma 4 file whose global layers have no V (K = V) was refused by such a guess;
- MoE expert tensors that disagree (``ffn_gate_exps`` of 1 expert beside 64 in
  ``ffn_down_exps``, a bias of one expert's row, a router wider than the experts) reached the C
  kernel, which read past them, or ended in ONNX Runtime tracebacks at warm-up.

Shapes are in GGUF order (row length first): a matrix of ``rows`` outputs over ``cols``
inputs is ``(cols, rows)``, a stack of experts ``(cols, rows, experts)``. Does not own reading
the file (`engine.gguf.reader`) or the metadata-only checks (`engine.gguf.consistency`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.arch.hparams import HParams
from engine.errors import CorruptModelError


@dataclass(frozen=True)
class Need:
    """One tensor a model needs: its name, its GGUF-order shape, whether it may be absent."""

    name: str
    shape: tuple[int, ...]
    required: bool = True


def check_tensors(gf: Any, hp: HParams, path: Path) -> None:
    """CorruptModelError naming the first tensor of ``gf`` (an `engine.gguf.reader.GgufFile`)
    that `expected_tensors` says is missing or of another shape."""
    if not gf.tensors:
        return  # a vocabulary-only file (llama.cpp's ggml-vocab-*.gguf): read for its tokenizer
    _check_expert_counts(hp, path)
    for need in expected_tensors(hp, lambda name: gf.tensor(name) is not None):
        found = gf.tensor(need.name)
        if found is None:
            if need.required:
                raise CorruptModelError(
                    f"{path.name}: {need.name} is missing, which a {hp.arch} model of "
                    f"{hp.n_layers} layers needs (a damaged or incomplete file)"
                )
            continue
        shape = tuple(int(d) for d in found.shape)
        if shape != need.shape:
            raise CorruptModelError(
                f"{path.name}: {need.name} has shape {list(shape)}, but the file's settings "
                f"give {list(need.shape)} (a damaged file, or tensors that disagree)"
            )


def _check_expert_counts(hp: HParams, path: Path) -> None:
    if hp.has_experts and not 0 < hp.n_experts_used <= hp.n_experts:
        raise CorruptModelError(
            f"{path.name}: it routes {hp.n_experts_used} experts per token of "
            f"{hp.n_experts} (expert_used_count must be 1 to expert_count)"
        )


def expected_tensors(hp: HParams, has: Any = lambda name: False) -> list[Need]:
    """Every tensor ``hp``'s model needs (``has(name)``: whether the file holds a tensor, for
    the few choices a converter makes, such as fused or separate expert gate and up)."""
    h = hp.hidden
    out = [
        Need("token_embd.weight", (h, hp.vocab)),
        Need("output_norm.weight", (h,)),
        Need("output.weight", (h, hp.vocab), required=False),  # absent: tied to the embedding
    ]
    for i in range(hp.n_layers):
        p = f"blk.{i}."
        out.append(Need(p + "attn_norm.weight", (h,)))
        out += _recurrent(hp, p) if hp.is_recurrent(i) else _attention(hp, i, p)
        out.append(Need(p + hp.spec.ffn_norm + ".weight", (h,), required=not _gemma4(hp)))
        if not hp.spec.moe:
            out += _mlp(hp, i, p)
        if hp.has_experts:
            out += _experts(hp, p, has)
    return out


def _gemma4(hp: HParams) -> bool:
    return hp.spec.experts_beside_mlp  # its norms are named per branch (pre_ffw_norm_2, ...)


def _attention(hp: HParams, i: int, p: str) -> list[Need]:
    spec, h = hp.spec, hp.hidden
    heads, kv, dim = hp.n_heads, hp.kv_heads_at(i), hp.head_dim_at(i)
    q_rows = heads * dim * (2 if spec.hybrid else 1)  # qwen35: each head's query, then gate
    own_kv = hp.kv_source(i) == i  # gemma4's KV-sharing layers attend over an earlier layer's
    if spec.fused_qkv:
        out = [Need(p + "attn_qkv.weight", (h, (heads + 2 * kv) * dim))]
    else:
        out = [
            Need(p + "attn_q.weight", (h, q_rows)),
            Need(p + "attn_k.weight", (h, kv * dim), required=own_kv),
            # gemma4: a layer without V uses K as V (its global layers, attention_k_eq_v)
            Need(p + "attn_v.weight", (h, kv * dim), required=own_kv and not spec.v_norm),
        ]
    out.append(Need(p + "attn_output.weight", (heads * dim, h)))
    if spec.qkv_bias:
        out += [Need(p + "attn_q.bias", (heads * dim,)), Need(p + "attn_k.bias", (kv * dim,)),
                Need(p + "attn_v.bias", (kv * dim,))]  # fmt: skip
    if spec.qk_norm:
        out += [Need(p + "attn_q_norm.weight", (dim,)),
                Need(p + "attn_k_norm.weight", (dim,), required=own_kv)]  # fmt: skip
    return out


def _recurrent(hp: HParams, p: str) -> list[Need]:
    """A Gated DeltaNet layer (qwen35): its output projection back to the hidden width."""
    return [Need(p + "ssm_out.weight", (hp.ssm_v_heads * hp.ssm_head_dim, hp.hidden))]


def _mlp(hp: HParams, i: int, p: str) -> list[Need]:
    h, f = hp.hidden, hp.ffn_at(i)
    if hp.spec.fused_gate_up:  # phi3: gate rows, then up rows
        return [Need(p + "ffn_up.weight", (h, 2 * f)), Need(p + "ffn_down.weight", (f, h))]
    return [Need(p + "ffn_gate.weight", (h, f)), Need(p + "ffn_up.weight", (h, f)),
            Need(p + "ffn_down.weight", (f, h))]  # fmt: skip


def _experts(hp: HParams, p: str, has: Any) -> list[Need]:
    """The router and the experts, every one holding ``expert_count`` experts: the C kernel
    indexes all of them with the router's ids."""
    h, f, e = hp.hidden, hp.expert_ffn, hp.n_experts
    out = [Need(p + "ffn_gate_inp.weight", (h, e)), Need(p + "ffn_gate_inp.bias", (e,), False)]
    if has(p + "ffn_gate_up_exps.weight"):  # newer converters: gate rows, then up
        out += [Need(p + "ffn_gate_up_exps.weight", (h, 2 * f, e)),
                Need(p + "ffn_gate_up_exps.bias", (2 * f, e), False)]  # fmt: skip
    else:
        out += [
            Need(p + "ffn_gate_exps.weight", (h, f, e)),
            Need(p + "ffn_up_exps.weight", (h, f, e)),
        ]
    out += [
        Need(p + "ffn_down_exps.weight", (f, h, e)),
        Need(p + "ffn_gate_exps.bias", (f, e), False),  # gpt-oss
        Need(p + "ffn_up_exps.bias", (f, e), False),
        Need(p + "ffn_down_exps.bias", (h, e), False),
        Need(p + "ffn_down_exps.scale", (e,), False),  # gemma4
    ]
    if hp.shared_expert_ffn:  # qwen35moe's shared expert
        s = hp.shared_expert_ffn
        out += [Need(p + "ffn_gate_shexp.weight", (h, s)), Need(p + "ffn_up_shexp.weight", (h, s)),
                Need(p + "ffn_down_shexp.weight", (s, h))]  # fmt: skip
    return out
