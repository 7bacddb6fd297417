"""GGUF llama → ONNX graph for the CPU fast path, built offline from the GGUF file alone.

Owns the weight repacking (GGUF block quants → ONNX Runtime `MatMulNBits` layout) and the graph:
one decoder layer per block of SimplifiedLayerNormalization, a fused QKV projection,
GroupQueryAttention (rotary inside, KV cache in/out), a fused gate/up projection with SiLU, and
the (tied) output head. It does not run the graph (`engine.runners.onnx_runner`) nor decide
when the fast path is used (`engine.fastpath.cache.build_fast_runner`).

Why the weights stay bit-exact: Q4_1 stores ``w = d·q + m`` per 32-weight block with q in 0..15.
`MatMulNBits` without zero points computes ``d·(q − 8)``, so ``x·wᵀ = MatMulNBits(x) + bsum(x)·m'ᵀ``
with ``m' = m + 8·d`` and ``bsum(x)`` the per-block sums of x. Both terms run on fast kernels
(a float zero-point input would be exact too, but ~20× slower on this CPU). Q8_0 (``w = d·q``,
q signed) maps to 8-bit `MatMulNBits` with the default zero point 128 after adding 128 to q;
Q4_0 (``w = d·(q − 8)``) maps directly. F32/F16 matrices use a plain float MatMul.

Activations are quantised to int8 per block inside the kernel (``accuracy_level=4``), as
llama.cpp does with its Q8 activations; the float-activation kernels are far slower here
(8-bit head: 350 ms vs 3.6 ms per token).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import UnsupportedModelError

BLOCK = 32
ACCURACY_INT8 = 4
GRAPH_VERSION = 1  # bump when the graph layout changes: converted caches are rebuilt
MS = "com.microsoft"


@dataclass(frozen=True)
class LlamaConfig:
    """The hyper-parameters the graph needs, read from GGUF metadata."""

    n_layers: int
    hidden: int
    ffn: int
    n_heads: int
    n_kv_heads: int
    vocab: int
    context: int
    rope_base: float
    rms_eps: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.n_heads


def read_config(reader: Any) -> LlamaConfig:
    """Llama hyper-parameters from a `gguf.GGUFReader`; unsupported architectures raise."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise UnsupportedModelError(f"fast path supports llama GGUF models, not {arch!r}")
    get = lambda key, default=None: _field(reader, f"llama.{key}", default)  # noqa: E731
    hidden = int(get("embedding_length"))
    n_heads = int(get("attention.head_count"))
    rope_dim = int(get("rope.dimension_count", hidden // n_heads))
    if rope_dim != hidden // n_heads or get("rope.scaling.type") not in (None, "none"):
        raise UnsupportedModelError("fast path supports full, unscaled rotary embeddings only")
    embd = _tensor(reader, "token_embd.weight")
    return LlamaConfig(
        n_layers=int(get("block_count")),
        hidden=hidden,
        ffn=int(get("feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(get("attention.head_count_kv", n_heads)),
        vocab=int(embd.shape[-1]),
        context=int(get("context_length", 2048)),
        rope_base=float(get("rope.freq_base", 10000.0)),
        rms_eps=float(get("attention.layer_norm_rms_epsilon", 1e-5)),
    )


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _tensor(reader: Any, name: str) -> Any:
    for tensor in reader.tensors:
        if tensor.name == name:
            return tensor
    raise UnsupportedModelError(f"GGUF has no tensor {name!r}")


# ---------------------------------------------------------------- weight repacking


@dataclass
class Linear:
    """One projection ready for the graph: `MatMulNBits` arrays, or a float matrix."""

    n: int
    k: int
    bits: int = 0  # 0: float matmul with `dense`
    packed: np.ndarray | None = None  # (N, K/32, 32·bits/8) uint8
    scales: np.ndarray | None = None  # (N, K/32) float32
    offsets: np.ndarray | None = None  # (N, K/32) float32: m' for Q4_1, else None
    dense: np.ndarray | None = None  # (K, N) float32


def repack(tensor: Any) -> Linear:
    """A 2-D GGUF weight (rows = output features) in the layout `MatMulNBits` reads."""
    kind = tensor.tensor_type.name
    k, n = (int(x) for x in tensor.shape)
    raw = np.asarray(tensor.data)
    if kind in ("F32", "F16"):
        return Linear(n, k, dense=np.ascontiguousarray(raw.reshape(n, k).astype(np.float32).T))
    if k % BLOCK:
        raise UnsupportedModelError(f"{tensor.name}: K={k} is not a multiple of {BLOCK}")
    if kind == "Q8_0":
        blocks = raw.reshape(n, k // BLOCK, 34)
        q = (blocks[..., 2:].view(np.int8).astype(np.int16) + 128).astype(np.uint8)
        return Linear(n, k, 8, np.ascontiguousarray(q), _half(blocks[..., 0:2]))
    if kind in ("Q4_0", "Q4_1"):
        width = 18 if kind == "Q4_0" else 20
        blocks = raw.reshape(n, k // BLOCK, width)
        nibbles = blocks[..., width - 16 :]  # byte j: element j (low) and j+16 (high)
        q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # (N, nb, 32)
        packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # ORT: pairs per byte
        d = _half(blocks[..., 0:2])
        offsets = _half(blocks[..., 2:4]) + 8.0 * d if kind == "Q4_1" else None
        return Linear(n, k, 4, np.ascontiguousarray(packed), d, offsets)
    raise UnsupportedModelError(f"{tensor.name}: quantisation {kind} is not supported")


def _half(pairs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(pairs).view(np.float16)[..., 0].astype(np.float32)


def fuse(parts: list[Linear]) -> Linear | None:
    """Stack projections that read the same input (Q,K,V; gate,up) into one, when alike."""
    first = parts[0]
    if any(p.bits != first.bits or (p.offsets is None) != (first.offsets is None) for p in parts):
        return None
    n = sum(p.n for p in parts)
    if first.bits == 0:
        return Linear(n, first.k, dense=np.concatenate([p.dense for p in parts], axis=1))  # type: ignore[misc]
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts], axis=0)  # noqa: E731
    offsets = cat("offsets") if first.offsets is not None else None
    return Linear(n, first.k, first.bits, cat("packed"), cat("scales"), offsets)


# ---------------------------------------------------------------- graph


class GraphBuilder:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._count = 0
        # Keyed by id(): keep the Linear alive too, or a freed id gets reused by the next one.
        self._weights: dict[int, tuple[Linear, str, str]] = {}

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(
        self, op_type: str, inputs: list[str], hint: str = "", n_out: int = 1, **attrs: Any
    ) -> Any:
        from onnx import helper

        outs = [self.name(hint or op_type) for _ in range(n_out)]
        domain = MS if op_type in _CONTRIB else ""
        self.nodes.append(helper.make_node(op_type, inputs, outs, domain=domain, **attrs))
        return outs[0] if n_out == 1 else outs

    def weights(self, lin: Linear, hint: str) -> tuple[str, str]:
        """Initializer names of a quantised weight, shared by every node that reads it."""
        if id(lin) not in self._weights:
            self._weights[id(lin)] = (
                lin,
                self.const(hint + ".q", lin.packed),  # type: ignore[arg-type]
                self.const(hint + ".d", lin.scales),  # type: ignore[arg-type]
            )
        _, b, s = self._weights[id(lin)]
        return b, s

    def linear(self, x: str, lin: Linear, hint: str) -> str:
        """x·Wᵀ for one repacked weight, with the Q4_1 block-offset term when needed."""
        if lin.bits == 0:
            return self.op("MatMul", [x, self.const(hint + ".w", lin.dense)], hint)  # type: ignore[arg-type]
        b, s = self.weights(lin, hint)
        y = self.op(
            "MatMulNBits", [x, b, s], hint, K=lin.k, N=lin.n, bits=lin.bits,
            block_size=BLOCK, accuracy_level=ACCURACY_INT8,
        )  # fmt: skip
        if lin.offsets is None:
            return y
        nb = lin.k // BLOCK
        blocks = self.op("Reshape", [x, self.const("shape", np.array([1, -1, nb, BLOCK]))])
        bsum = self.op("ReduceSum", [blocks, self.const("axis", np.array([-1]))], keepdims=0)
        corr = self.op("MatMul", [bsum, self.const(hint + ".m", lin.offsets.T.copy())])  # (1, S, N)
        return self.op("Add", [y, corr], hint + ".out")


_CONTRIB = {"MatMulNBits", "GroupQueryAttention", "SkipSimplifiedLayerNormalization"}


def build_model(reader: Any, progress: Callable[[float], None] | None = None) -> Any:
    """The whole ONNX model for a llama GGUF. Raises UnsupportedModelError when it cannot."""
    from onnx import TensorProto, helper

    cfg = read_config(reader)
    g = GraphBuilder()
    f32 = TensorProto.FLOAT
    cache_shape: list[str | int | None] = [1, cfg.n_kv_heads, "cache_len", cfg.head_dim]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("logits_start", TensorProto.INT64, [1]),
    ]
    outputs = [helper.make_tensor_value_info("logits", f32, [1, "out_seq", cfg.vocab])]
    cos, sin = _rope_tables(cfg)
    cos_name, sin_name = g.const("cos", cos), g.const("sin", sin)
    head = repack(_output_tensor(reader))
    hidden = _embed(g, reader, head)
    pending: str | None = None  # the last sublayer output, not yet added to `hidden`
    for i in range(cfg.n_layers):
        t = lambda n: _tensor(reader, f"blk.{i}.{n}.weight")  # noqa: B023, E731
        hidden, normed = _add_norm(g, hidden, pending, t("attn_norm"), cfg.rms_eps)
        pk, pv = f"past_key.{i}", f"past_value.{i}"
        inputs += [helper.make_tensor_value_info(n, f32, cache_shape) for n in (pk, pv)]
        outputs += [
            helper.make_tensor_value_info(f"present_{n}.{i}", f32, cache_shape)
            for n in ("key", "value")
        ]
        qkv = _projection(g, normed, [t("attn_q"), t("attn_k"), t("attn_v")], f"l{i}.qkv")
        g.nodes.append(_attention(cfg, i, qkv, pk, pv, cos_name, sin_name))
        pending = g.linear(f"attn.{i}", repack(t("attn_output")), f"l{i}.o")
        hidden, normed = _add_norm(g, hidden, pending, t("ffn_norm"), cfg.rms_eps)
        gate_up = _projection(g, normed, [t("ffn_gate"), t("ffn_up")], f"l{i}.gu")
        sizes = g.const("split", np.array([cfg.ffn, cfg.ffn]))
        gate, up = g.op("Split", [gate_up, sizes], n_out=2, axis=-1)
        act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
        pending = g.linear(act, repack(t("ffn_down")), f"l{i}.down")
        if progress:
            progress((i + 1) / cfg.n_layers)
    # Only rows from `logits_start` on reach the head: prefill asks for its last row only.
    end, axis = g.const("end", np.array([2**62])), g.const("axis", np.array([1]))
    last = g.op("Slice", [hidden, "logits_start", end, axis])
    last_pending = g.op("Slice", [pending, "logits_start", end, axis])  # type: ignore[list-item]
    _, normed = _add_norm(g, last, last_pending, _tensor(reader, "output_norm.weight"), cfg.rms_eps)
    g.nodes.append(helper.make_node("Identity", [g.linear(normed, head, "head")], ["logits"]))
    graph = helper.make_graph(g.nodes, "hearth_llama", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _output_tensor(reader: Any) -> Any:
    names = {t.name for t in reader.tensors}
    return _tensor(reader, "output.weight" if "output.weight" in names else "token_embd.weight")


def _rope_tables(cfg: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin (context, head_dim/2) for the pair-wise ("interleaved") rotation GGUF expects."""
    half = cfg.head_dim // 2
    inv = 1.0 / cfg.rope_base ** (np.arange(half, dtype=np.float64) * 2 / cfg.head_dim)
    angles = np.arange(cfg.context, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _embed(g: GraphBuilder, reader: Any, head: Linear) -> str:
    """Token embeddings; a Q8_0 table tied to the head is gathered from the head's own bytes."""
    import gguf

    embd = _tensor(reader, "token_embd.weight")
    hidden = int(embd.shape[0])
    if _output_tensor(reader) is embd and head.bits == 8:
        q_name, d_name = g.weights(head, "head")
        q = g.op("Gather", [q_name, "input_ids"], axis=0)  # (1, S, nb, 32)
        d = g.op("Gather", [d_name, "input_ids"], axis=0)  # (1, S, nb)
        centred = g.op("Sub", [g.op("Cast", [q], to=1), g.const("c128", np.array(128, np.float32))])
        scaled = g.op("Mul", [centred, g.op("Unsqueeze", [d, g.const("ax", np.array([-1]))])])
        return g.op("Reshape", [scaled, g.const("shape", np.array([1, -1, hidden]))], "embed")
    table = gguf.quants.dequantize(embd.data, embd.tensor_type).reshape(-1, hidden)
    return g.op("Gather", [g.const("embd", table.astype(np.float32)), "input_ids"], "embed", axis=0)


def _projection(g: GraphBuilder, x: str, tensors: list[Any], hint: str) -> str:
    parts = [repack(t) for t in tensors]
    fused = fuse(parts)
    if fused is not None:
        return g.linear(x, fused, hint)
    outs = [g.linear(x, p, f"{hint}{j}") for j, p in enumerate(parts)]
    return g.op("Concat", outs, hint, axis=-1)


def _add_norm(
    g: GraphBuilder, hidden: str, pending: str | None, weight: Any, eps: float
) -> tuple[str, str]:
    """(hidden + pending, RMSNorm of it): one fused op when there is something to add."""
    gamma = g.const("norm", np.asarray(weight.data, np.float32))
    if pending is None:
        return hidden, g.op("SimplifiedLayerNormalization", [hidden, gamma], axis=-1, epsilon=eps)
    from onnx import helper

    normed, summed = g.name("norm"), g.name("resid")
    g.nodes.append(
        helper.make_node(
            "SkipSimplifiedLayerNormalization", [pending, hidden, gamma], [normed, "", "", summed],
            domain=MS, epsilon=eps,
        )
    )  # fmt: skip
    return summed, normed


def _attention(cfg: LlamaConfig, i: int, qkv: str, pk: str, pv: str, cos: str, sin: str) -> Any:
    from onnx import helper

    return helper.make_node(
        "GroupQueryAttention",
        [qkv, "", "", pk, pv, "seqlens_k", "total_sequence_length", cos, sin],
        [f"attn.{i}", f"present_key.{i}", f"present_value.{i}"],
        domain=MS,
        num_heads=cfg.n_heads,
        kv_num_heads=cfg.n_kv_heads,
        do_rotary=1,
        rotary_interleaved=1,  # GGUF permutes Q/K rows for pair-wise rope: keep them as stored
    )
