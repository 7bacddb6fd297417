"""Synthetic vision projectors (mmproj GGUFs) of random weights, in llama.cpp's own layout.

Owns the `clip.*` metadata and the `v.*` (vision tower) / `mm.*` (projector) tensors of three
projector types as llama.cpp's `convert_hf_to_gguf.py --mmproj` writes them and
`tools/mtmd/clip.cpp` reads them:

- ``gemma3``: SigLIP (LayerNorm, q/k/v/out with biases, GELU MLP), 4x4 average pooling, the
  soft-embedding RMS norm and ``mm.input_projection`` stored (vision, text) (llama.cpp
  transposes it at run time);
- ``gemma4v``: RMS norms, per-head q/k norms, 2-D rotary positions, a gated GELU MLP with post
  norms, a learned (x, y) position table, 3x3 pooling, optional clamp scalars
  (``<weight>.input_min`` ...) and ``v.std_bias``/``v.std_scale``;
- ``qwen3vl_merger`` (Qwen3-VL, Qwen3.5): two patch-embedding kernels (the temporal pair), fused
  qkv, 2x2 merge into ``mm.0``/``mm.2`` and optional deepstack mergers ``v.deepstack.N.*``.

Matrices are written in F16, BF16 or Q8_0 (norms, biases, the position tables and clamp scalars
stay F32; the patch kernel stays F16, as the converter keeps it). `TINY` shapes make files of a
few hundred kB for tests; `REAL` shapes are Gemma 4 E2B's and Qwen3.5-0.8B's towers for
benchmarks. Does not own reading them (`engine.vision.mmproj`) nor the language models they
pair with (`bench.synth.core`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import quantize

Q = GGMLQuantizationType
MATRIX_TYPES = {"F16": Q.F16, "BF16": Q.BF16, "Q8_0": Q.Q8_0, "F32": Q.F32}


@dataclass(frozen=True)
class MmprojShape:
    """One projector's hyper-parameters (what the ``clip.vision.*`` keys say)."""

    projector: str  # clip.projector_type
    n_embd: int
    n_ff: int
    n_head: int
    n_layer: int
    patch: int
    image_size: int
    merge: int  # gemma3/gemma4v: pooling kernel; qwen3vl: spatial merge
    n_pos: int  # rows of the position table (gemma4v: per axis)
    proj_dim: int  # the language model's embedding width
    deepstack: tuple[int, ...] = ()  # qwen3vl: layers with a deepstack merger
    clamp: bool = False  # gemma4v: clamp scalars on some linears
    standardize: bool = False  # gemma4v: v.std_bias / v.std_scale
    eps: float = 1e-6


TINY: dict[str, MmprojShape] = {
    "gemma3": MmprojShape("gemma3", 64, 96, 4, 2, 8, 128, 4, 256, 128),
    "gemma4v": MmprojShape(
        "gemma4v", 64, 96, 4, 2, 16, 224, 3, 512, 128, clamp=True, standardize=True
    ),
    "qwen3vl": MmprojShape("qwen3vl_merger", 64, 96, 4, 2, 16, 256, 2, 256, 128),
    "qwen3vl-deepstack": MmprojShape(
        "qwen3vl_merger", 64, 96, 4, 3, 16, 256, 2, 256, 128, deepstack=(0, 1)
    ),
}
# Gemma 4 E2B (Gemma4VisionConfig: 768 wide, 16 layers, 12 heads, 3072, 10240 positions; the
# E2B text model is 1536 wide) and Qwen3.5-0.8B (its vision tower as recalled: 12 layers of
# 768, 12 heads, 3072, 48x48 positions, out 1024 = the text width; no deepstack).
REAL: dict[str, MmprojShape] = {
    "gemma4-e2b": MmprojShape("gemma4v", 768, 3072, 12, 16, 16, 768, 3, 10240, 1536, clamp=True),
    "qwen3.5-0.8b": MmprojShape("qwen3vl_merger", 768, 3072, 12, 12, 16, 768, 2, 2304, 1024),
}


def tiny_shape(name: str, **overrides: object) -> MmprojShape:
    """A tiny projector of kind ``name`` (a `TINY` key), with fields replaced."""
    return replace(TINY[name], **overrides)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Spec:
    name: str
    shape: tuple[int, ...]  # numpy order (gguf-py reverses it into ne)
    kind: str  # matrix | matrix16 | conv | vector | norm | table | scalar


def tensor_specs(s: MmprojShape) -> list[_Spec]:
    """Every tensor of ``s``'s file, in the order the converter writes them."""
    return list(_specs(s))


def _specs(s: MmprojShape) -> Iterator[_Spec]:
    e = s.n_embd
    conv = (e, 3, s.patch, s.patch)
    yield _Spec("v.patch_embd.weight", conv, "conv")
    if s.projector == "qwen3vl_merger":
        yield _Spec("v.patch_embd.weight.1", conv, "conv")
    if s.projector != "gemma4v":
        yield _Spec("v.patch_embd.bias", (e,), "vector")
        yield _Spec("v.position_embd.weight", (s.n_pos, e), "table")
    else:
        yield _Spec("v.position_embd.weight", (2, s.n_pos, e), "table")
    for i in range(s.n_layer):
        yield from _layer(s, i)
    if s.projector == "gemma3":
        yield _Spec("v.post_ln.weight", (e,), "norm")
        yield _Spec("v.post_ln.bias", (e,), "vector")
        yield _Spec("mm.soft_emb_norm.weight", (e,), "norm")
        # F16 even in Q8_0 files: llama.cpp transposes it at run time, which ggml cannot do to
        # Q8_0 blocks (libmtmd returns NaN rows for such a file)
        yield _Spec("mm.input_projection.weight", (e, s.proj_dim), "matrix16")
    elif s.projector == "gemma4v":
        if s.standardize:
            yield _Spec("v.std_bias", (e,), "vector")
            yield _Spec("v.std_scale", (e,), "norm")
        yield _Spec("mm.input_projection.weight", (s.proj_dim, e), "matrix")
        if s.clamp:
            yield from _clamps("mm.input_projection")
    else:
        merged = e * s.merge * s.merge
        yield _Spec("v.post_ln.weight", (e,), "norm")
        yield _Spec("v.post_ln.bias", (e,), "vector")
        yield _Spec("mm.0.weight", (merged, merged), "matrix")
        yield _Spec("mm.0.bias", (merged,), "vector")
        yield _Spec("mm.2.weight", (s.proj_dim, merged), "matrix")
        yield _Spec("mm.2.bias", (s.proj_dim,), "vector")
        for i in s.deepstack:
            yield _Spec(f"v.deepstack.{i}.norm.weight", (merged,), "norm")
            yield _Spec(f"v.deepstack.{i}.norm.bias", (merged,), "vector")
            yield _Spec(f"v.deepstack.{i}.fc1.weight", (merged, merged), "matrix")
            yield _Spec(f"v.deepstack.{i}.fc1.bias", (merged,), "vector")
            yield _Spec(f"v.deepstack.{i}.fc2.weight", (s.proj_dim, merged), "matrix")
            yield _Spec(f"v.deepstack.{i}.fc2.bias", (s.proj_dim,), "vector")


def _layer(s: MmprojShape, i: int) -> Iterator[_Spec]:
    e, f, p = s.n_embd, s.n_ff, f"v.blk.{i}"
    if s.projector == "gemma4v":
        d_head = e // s.n_head
        yield _Spec(f"{p}.ln1.weight", (e,), "norm")
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            yield _Spec(f"{p}.{name}.weight", (e, e), "matrix")
        yield _Spec(f"{p}.attn_q_norm.weight", (d_head,), "norm")
        yield _Spec(f"{p}.attn_k_norm.weight", (d_head,), "norm")
        yield _Spec(f"{p}.attn_post_norm.weight", (e,), "norm")
        yield _Spec(f"{p}.ln2.weight", (e,), "norm")
        yield _Spec(f"{p}.ffn_gate.weight", (f, e), "matrix")
        yield _Spec(f"{p}.ffn_up.weight", (f, e), "matrix")
        yield _Spec(f"{p}.ffn_down.weight", (e, f), "matrix")
        yield _Spec(f"{p}.ffn_post_norm.weight", (e,), "norm")
        if s.clamp and i == 0:
            for name in ("attn_q", "attn_out", "ffn_down"):
                yield from _clamps(f"{p}.{name}")
        return
    yield _Spec(f"{p}.ln1.weight", (e,), "norm")
    yield _Spec(f"{p}.ln1.bias", (e,), "vector")
    if s.projector == "qwen3vl_merger":
        yield _Spec(f"{p}.attn_qkv.weight", (3 * e, e), "matrix")
        yield _Spec(f"{p}.attn_qkv.bias", (3 * e,), "vector")
    else:
        for name in ("attn_q", "attn_k", "attn_v"):
            yield _Spec(f"{p}.{name}.weight", (e, e), "matrix")
            yield _Spec(f"{p}.{name}.bias", (e,), "vector")
    yield _Spec(f"{p}.attn_out.weight", (e, e), "matrix")
    yield _Spec(f"{p}.attn_out.bias", (e,), "vector")
    yield _Spec(f"{p}.ln2.weight", (e,), "norm")
    yield _Spec(f"{p}.ln2.bias", (e,), "vector")
    yield _Spec(f"{p}.ffn_up.weight", (f, e), "matrix")
    yield _Spec(f"{p}.ffn_up.bias", (f,), "vector")
    yield _Spec(f"{p}.ffn_down.weight", (e, f), "matrix")
    yield _Spec(f"{p}.ffn_down.bias", (e,), "vector")


def _clamps(prefix: str) -> Iterator[_Spec]:
    for end in ("input_min", "input_max", "output_min", "output_max"):
        yield _Spec(f"{prefix}.{end}", (1,), "scalar")


def write_mmproj(
    path: Path,
    shape: MmprojShape,
    matrix_type: str = "F16",
    seed: int = 0,
    *,
    metadata: dict[str, object] | None = None,
    drop: tuple[str, ...] = (),
) -> Path:
    """Write a random-weight mmproj of ``shape`` to ``path``; matrices in ``matrix_type``.

    For hostile-file tests: ``metadata`` replaces keys' values (say a width the tensors do not
    have), ``drop`` leaves tensors out."""
    qtype = MATRIX_TYPES[matrix_type]
    rng = np.random.default_rng(seed)
    writer = GGUFWriter(str(path), "clip")
    _add_metadata(_Lying(writer, metadata or {}), shape, qtype)
    for spec in tensor_specs(shape):
        if spec.name in drop:
            continue
        data, kind = _tensor(rng, spec, qtype)
        if kind in (Q.F32, Q.F16):
            writer.add_tensor(spec.name, data)
        else:
            writer.add_tensor(spec.name, data, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


class _Lying:
    """A GGUFWriter whose scalar and string keys can be replaced on the way in."""

    def __init__(self, writer: GGUFWriter, replace: dict[str, object]) -> None:
        self.writer, self.replace = writer, replace

    def __getattr__(self, name: str) -> object:
        add = getattr(self.writer, name)
        if name not in ("add_string", "add_uint32", "add_float32", "add_bool"):
            return add

        def replaced(key: str, value: object) -> None:
            add(key, self.replace.get(key, value))

        return replaced


def _tensor(
    rng: np.random.Generator, spec: _Spec, qtype: GGMLQuantizationType
) -> tuple[np.ndarray, GGMLQuantizationType]:
    if spec.kind == "scalar":  # clamp bounds that bite on random activations
        value = {"input_min": -1.5, "input_max": 1.5, "output_min": -2.0, "output_max": 2.0}
        return np.array([value[spec.name.rsplit(".", 1)[1]]], np.float32), Q.F32
    if spec.kind == "norm":
        return (1.0 + 0.1 * rng.standard_normal(spec.shape)).astype(np.float32), Q.F32
    if spec.kind == "vector":
        return (0.05 * rng.standard_normal(spec.shape)).astype(np.float32), Q.F32
    if spec.kind == "table":
        return (0.5 * rng.standard_normal(spec.shape)).astype(np.float32), Q.F32
    fan_in = int(np.prod(spec.shape[1:]))
    data = (rng.standard_normal(spec.shape) / np.sqrt(fan_in)).astype(np.float32)
    if spec.kind in ("conv", "matrix16"):
        return data.astype(np.float16), Q.F16
    if qtype == Q.Q8_0 and spec.shape[-1] % 32:
        qtype = Q.F16  # rows that are not whole Q8_0 blocks stay F16, as llama.cpp does
    if qtype == Q.F16:
        return data.astype(np.float16), Q.F16
    if qtype == Q.F32:
        return data, Q.F32
    return quantize(data, qtype), qtype


def _add_metadata(w: Any, s: MmprojShape, qtype: GGMLQuantizationType) -> None:
    w.add_string("general.name", f"synthetic {s.projector} mmproj")
    w.add_uint32("general.file_type", {Q.F32: 0, Q.F16: 1, Q.Q8_0: 7, Q.BF16: 32}[qtype])
    w.add_string("clip.projector_type", s.projector)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", s.image_size)
    w.add_uint32("clip.vision.patch_size", s.patch)
    w.add_uint32("clip.vision.embedding_length", s.n_embd)
    w.add_uint32("clip.vision.feed_forward_length", s.n_ff)
    w.add_uint32("clip.vision.projection_dim", s.proj_dim)
    w.add_uint32("clip.vision.block_count", s.n_layer)
    w.add_uint32("clip.vision.attention.head_count", s.n_head)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", s.eps)
    gemma4 = s.projector == "gemma4v"
    mean, std = ([0.0] * 3, [1.0] * 3) if gemma4 else ([0.5] * 3, [0.5] * 3)
    if s.projector == "qwen3vl_merger":
        mean, std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
        w.add_uint32("clip.vision.spatial_merge_size", s.merge)
        w.add_array("clip.vision.is_deepstack_layers", [i in s.deepstack for i in range(s.n_layer)])
    else:
        w.add_uint32("clip.vision.projector.scale_factor", s.merge)
    w.add_array("clip.vision.image_mean", mean)
    w.add_array("clip.vision.image_std", std)
