"""What each supported projector type is: one small frozen description per type.

Owns the table from ``clip.projector_type`` to a `Projector`: the family of language models it
pairs with, how libmtmd pre-processes its images (a fixed square, or a pixel budget between
token limits), the image markers of its chat template, and the tensors its file must hold with
their shapes as functions of the ``clip.vision.*`` hyper-parameters (`expected_tensors`).
Adding a projector type is a new description here and an encoder, not a new reader.

Does not own reading the file (`engine.vision.mmproj`), the pixels (`engine.vision.preprocess`)
or the arithmetic (`engine.vision.encoders`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class VisionParams:
    """The ``clip.vision.*`` hyper-parameters of one mmproj."""

    projector: str
    n_embd: int
    n_ff: int
    n_head: int
    n_layer: int
    patch: int
    image_size: int
    eps: float
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    merge: int  # pooling kernel (gemma) or spatial merge (qwen), per side
    gelu: bool  # clip.use_gelu (else quick GELU; SiLU is refused)

    @property
    def d_head(self) -> int:
        return self.n_embd // self.n_head


@dataclass(frozen=True)
class Projector:
    """One projector type as llama.cpp's libmtmd runs it."""

    name: str  # clip.projector_type
    family: str  # what the language model's general.architecture must belong to
    language_archs: tuple[str, ...]
    default_merge: int
    fixed_size: bool  # True: resize (letterboxed) to image_size²; False: a pixel budget
    min_tokens: int  # the pixel budget's default token limits (unused when fixed_size)
    max_tokens: int
    image_begin: str  # the text libmtmd puts before and after an image's embeddings
    image_end: str
    marker: str  # the chat template's own image placeholder token
    resize: str  # libmtmd's filter for this type: "bilinear" or "bicubic" (both Pillow's)


PROJECTORS: dict[str, Projector] = {
    "gemma3": Projector(
        "gemma3", "Gemma 3", ("gemma3",), 4, True, 0, 0,
        "<start_of_image>", "<end_of_image>", "<start_of_image>", "bilinear",
    ),
    "gemma4v": Projector(
        "gemma4v", "Gemma 4", ("gemma4",), 3, False, 70, 1120,
        "<|image>", "<image|>", "<|image|>", "bicubic",
    ),
    "qwen3vl_merger": Projector(
        "qwen3vl_merger", "Qwen3-VL / Qwen3.5", ("qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe"),
        2, False, 8, 4096,
        "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "bicubic",
    ),
}  # fmt: skip
# Types llama.cpp knows that Hearth does not run yet: refused by name, not as "corrupt".
KNOWN_ELSEWHERE = (
    "mlp", "ldp", "ldpv2", "resampler", "adapter", "qwen2vl_merger", "qwen2.5vl_merger",
    "step3vl", "gemma3nv", "gemma3na", "gemma4a", "phi4", "idefics3", "pixtral", "ultravox",
    "internvl", "llama4", "qwen2a", "qwen3a", "glma", "qwen2.5o", "voxtral", "lfm2", "kimivl",
    "paddleocr", "lightonocr", "cogvlm", "janus_pro", "dots_ocr", "deepseekocr", "glm4v",
)  # fmt: skip


def expected_tensors(
    p: VisionParams, deepstack: tuple[int, ...], proj_dim: int, n_pos: int
) -> Iterator[tuple[str, tuple[int, ...] | None, bool]]:
    """(name, numpy shape or None when any, required) for every tensor ``p``'s type reads.

    ``proj_dim``: the projector's output width as its last matrix says; ``n_pos``: the position
    table's rows (the file chooses them; libmtmd interpolates or indexes into it)."""
    e, _f = p.n_embd, p.n_ff
    conv = (e, 3, p.patch, p.patch)
    yield "v.patch_embd.weight", conv, True
    if p.projector == "gemma4v":
        yield "v.position_embd.weight", (2, n_pos, e), True
        yield "v.std_bias", (e,), False
        yield "v.std_scale", (e,), False
        yield "mm.input_projection.weight", (proj_dim, e), True
    else:
        yield "v.patch_embd.bias", (e,), True
        yield "v.position_embd.weight", (n_pos, e), True
        yield "v.post_ln.weight", (e,), True
        yield "v.post_ln.bias", (e,), True
    if p.projector == "gemma3":
        yield "mm.soft_emb_norm.weight", (e,), True
        yield "mm.input_projection.weight", (e, proj_dim), True
    if p.projector == "qwen3vl_merger":
        m = e * p.merge * p.merge
        yield "v.patch_embd.weight.1", conv, True
        yield "mm.0.weight", (m, m), True
        yield "mm.0.bias", (m,), True
        yield "mm.2.weight", (proj_dim, m), True
        yield "mm.2.bias", (proj_dim,), True
        for i in deepstack:
            for part, shape in (("norm.weight", (m,)), ("norm.bias", (m,)), ("fc1.weight", (m, m)),
                                ("fc1.bias", (m,)), ("fc2.weight", (proj_dim, m)),
                                ("fc2.bias", (proj_dim,))):  # fmt: skip
                yield f"v.deepstack.{i}.{part}", shape, True
    for i in range(p.n_layer):
        yield from _layer(p, i)


def _layer(p: VisionParams, i: int) -> Iterator[tuple[str, tuple[int, ...] | None, bool]]:
    e, f, b = p.n_embd, p.n_ff, f"v.blk.{i}"
    if p.projector == "gemma4v":
        for name in ("ln1", "attn_post_norm", "ln2", "ffn_post_norm"):
            yield f"{b}.{name}.weight", (e,), True
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            yield f"{b}.{name}.weight", (e, e), True
        yield f"{b}.attn_q_norm.weight", (p.d_head,), True
        yield f"{b}.attn_k_norm.weight", (p.d_head,), True
        yield f"{b}.ffn_gate.weight", (f, e), True
        yield f"{b}.ffn_up.weight", (f, e), True
        yield f"{b}.ffn_down.weight", (e, f), True
        return
    for name in ("ln1", "ln2"):
        yield f"{b}.{name}.weight", (e,), True
        yield f"{b}.{name}.bias", (e,), True
    if p.projector == "qwen3vl_merger":
        yield f"{b}.attn_qkv.weight", (3 * e, e), True
        yield f"{b}.attn_qkv.bias", (3 * e,), True
    else:
        for name in ("attn_q", "attn_k", "attn_v"):
            yield f"{b}.{name}.weight", (e, e), True
            yield f"{b}.{name}.bias", (e,), True
    yield f"{b}.attn_out.weight", (e, e), True
    yield f"{b}.attn_out.bias", (e,), True
    yield f"{b}.ffn_up.weight", (f, e), True
    yield f"{b}.ffn_up.bias", (f,), True
    yield f"{b}.ffn_down.weight", (e, f), True
    yield f"{b}.ffn_down.bias", (e,), True
