"""Reading an mmproj GGUF (llama.cpp's layout) and refusing one that cannot be trusted.

Owns `open_mmproj`: the ``clip.*`` metadata into `VisionParams`, the tensor table checked
against the projector type's description (`engine.vision.projectors.expected_tensors`): every
required tensor present, every shape as the hyper-parameters say, every byte range inside the
file and apart from the others. Weights stay in the file, in its own types; `Mmproj.weight`
dequantises one matrix when an encoder asks for it (no float32 copy of the whole tower).
`check_pairing` refuses an mmproj whose family or projection width is not the language
model's. Each refusal is one line naming the file and what is wrong.

Does not own the GGUF parser (`engine.gguf.reader`), pre-processing or the encoders.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import CorruptModelError, ModelNotFoundError, UnsupportedModelError
from engine.gguf.reader import GgufFile, GgufTensorInfo, open_gguf
from engine.vision.projectors import (
    KNOWN_ELSEWHERE,
    PROJECTORS,
    Projector,
    VisionParams,
    expected_tensors,
)

# GGML types an encoder can take a matrix in (gguf-py dequantises the rest of the block types
# too, but only these are written by llama.cpp's mmproj converter and tested here).
_READABLE = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q6_K"}


@dataclass
class Mmproj:
    """An opened mmproj: its parameters, projector type and (mapped) tensors."""

    path: Path
    params: VisionParams
    projector: Projector
    out_width: int  # one image token's embedding width (the language model's)
    deepstack: tuple[int, ...]
    clamps: dict[str, tuple[float, float, float, float]]  # gemma4v: weight -> in/out bounds
    _gguf: GgufFile = field(repr=False)
    identity: str = ""  # path, size and mtime: what the embeddings cache keys on

    def tensor(self, name: str) -> GgufTensorInfo | None:
        return self._gguf.tensor(name)

    def has(self, name: str) -> bool:
        return self._gguf.tensor(name) is not None

    def qtype(self, name: str) -> str:
        return str(self._require(name).tensor_type.name)

    def matrix_types(self) -> dict[str, str]:
        """Every 2-D tensor's name and GGML type (what an encoder can be built for)."""
        return {t.name: str(t.tensor_type.name) for t in self._gguf.tensors if len(t.shape) == 2}

    def weight(self, name: str) -> np.ndarray:
        """``name`` as float32 in numpy order, dequantised now (one matrix at a time)."""
        from gguf.quants import dequantize

        t = self._require(name)
        data = t.data
        if data.dtype == np.float32:
            return np.asarray(data)
        if data.dtype == np.float16:
            return data.astype(np.float32)
        return np.asarray(dequantize(data, t.tensor_type), dtype=np.float32)

    def _require(self, name: str) -> GgufTensorInfo:
        t = self._gguf.tensor(name)
        if t is None:
            raise CorruptModelError(f"{self.path.name} has no tensor {name}")
        return t


def open_mmproj(path: Path | str) -> Mmproj:
    """Open and check ``path``; a typed one-line error for anything libmtmd would not run."""
    path = Path(path)
    if not path.is_file():
        raise ModelNotFoundError(f"{path} does not exist")
    gf = open_gguf(path, string_arrays=False)
    meta = gf.metadata
    projector = _projector(path, meta)
    params = _params(path, meta, projector)
    deepstack = tuple(
        i for i in range(params.n_layer) if gf.tensor(f"v.deepstack.{i}.fc1.weight") is not None
    )
    proj_dim = _proj_dim(path, gf, projector.name)
    n_pos = _n_pos(path, gf, projector.name)
    _check_tensors(path, gf, params, deepstack, proj_dim, n_pos)
    out_width = proj_dim * (1 + len(deepstack))
    stat = path.stat()
    return Mmproj(
        path,
        params,
        projector,
        out_width,
        deepstack,
        _clamps(gf) if projector.name == "gemma4v" else {},
        gf,
        identity=f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}",
    )


def check_pairing(
    mm: Mmproj, language_arch: str, language_width: int, deepstack_layers: int = 0
) -> None:
    """Refuse ``mm`` beside a language model of another family or another embedding width.

    ``deepstack_layers``: the language model's ``n_deepstack_layers`` (Qwen3-VL), which must
    match the projector's deepstack mergers, each adding one more row per image token."""
    if language_arch not in mm.projector.language_archs:
        raise UnsupportedModelError(
            f"{mm.path.name} is a {mm.projector.family} vision projector; the model is "
            f"{language_arch!r}: download the mmproj made for this model"
        )
    if len(mm.deepstack) != deepstack_layers:
        # llama.cpp adds each deepstack row to the hidden state after one of the first layers;
        # a model that takes another count (Qwen3.5 takes none) would read them as garbage.
        raise UnsupportedModelError(
            f"{mm.path.name} has {len(mm.deepstack)} deepstack feature layers but the model "
            f"takes {deepstack_layers}: it is the mmproj of another model"
        )
    if mm.out_width != language_width * (1 + deepstack_layers):
        raise UnsupportedModelError(
            f"{mm.path.name} projects images to {mm.out_width} values per token but the model's "
            f"embeddings are {language_width} wide: it is the mmproj of another model size"
        )


def _projector(path: Path, meta: dict[str, Any]) -> Projector:
    if not meta.get("clip.has_vision_encoder", False):
        raise UnsupportedModelError(f"{path.name} is not a vision projector (no vision encoder)")
    name = meta.get("clip.projector_type") or meta.get("clip.vision.projector_type")
    if not isinstance(name, str) or not name:
        raise CorruptModelError(f"{path.name} does not say its projector type")
    found = PROJECTORS.get(name)
    if found is None:
        known = ", ".join(sorted(PROJECTORS))
        where = " (llama.cpp runs it; Hearth does not yet)" if name in KNOWN_ELSEWHERE else ""
        raise UnsupportedModelError(
            f"{path.name} has projector type {name!r}{where}; Hearth runs {known}"
        )
    return found


def _params(path: Path, meta: dict[str, Any], projector: Projector) -> VisionParams:
    def need(key: str) -> Any:
        value = meta.get(f"clip.vision.{key}")
        if value is None:
            raise CorruptModelError(f"{path.name} lacks clip.vision.{key}")
        return value

    def positive(key: str) -> int:
        value = need(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise CorruptModelError(f"{path.name}: clip.vision.{key} is {value!r}")
        return value

    if meta.get("clip.use_silu"):
        raise UnsupportedModelError(f"{path.name} uses a SiLU vision MLP, which Hearth lacks")
    mean, std = _triple(path, meta, "image_mean"), _triple(path, meta, "image_std")
    merge_key = (
        "spatial_merge_size" if projector.name == "qwen3vl_merger" else "projector.scale_factor"
    )
    merge = meta.get(f"clip.vision.{merge_key}", projector.default_merge)
    params = VisionParams(
        projector.name,
        positive("embedding_length"),
        positive("feed_forward_length"),
        positive("attention.head_count"),
        positive("block_count"),
        positive("patch_size"),
        int(meta.get("clip.vision.image_size", 0)),
        float(need("attention.layer_norm_epsilon")),
        mean,
        std,
        int(merge),
        bool(meta.get("clip.use_gelu", False)),
    )
    if params.n_embd % params.n_head or params.d_head % 4 or params.merge <= 0:
        raise CorruptModelError(
            f"{path.name}: {params.n_embd} values cannot be split into {params.n_head} heads "
            f"of rotary pairs (merge {params.merge})"
        )
    if projector.fixed_size and (params.image_size <= 0 or params.image_size % params.patch):
        raise CorruptModelError(f"{path.name}: image_size {params.image_size} is not whole patches")
    return params


def _triple(path: Path, meta: dict[str, Any], key: str) -> tuple[float, float, float]:
    value = meta.get(f"clip.vision.{key}")
    values = [] if value is None else [float(v) for v in np.asarray(value).reshape(-1)]
    if len(values) != 3 or (key == "image_std" and min(values) <= 0):
        raise CorruptModelError(f"{path.name}: clip.vision.{key} is {value!r}, not 3 values")
    return values[0], values[1], values[2]


def _shape(t: GgufTensorInfo) -> tuple[int, ...]:
    return tuple(int(d) for d in reversed(t.shape.tolist()))


def _proj_dim(path: Path, gf: GgufFile, projector: str) -> int:
    name, axis = {
        "gemma3": ("mm.input_projection.weight", 1),
        "gemma4v": ("mm.input_projection.weight", 0),
        "qwen3vl_merger": ("mm.2.weight", 0),
    }[projector]
    t = gf.tensor(name)
    if t is None or len(_shape(t)) != 2:
        raise CorruptModelError(f"{path.name} has no 2-D {name}, the projection")
    return _shape(t)[axis]


def _n_pos(path: Path, gf: GgufFile, projector: str) -> int:
    t = gf.tensor("v.position_embd.weight")
    if t is None:
        raise CorruptModelError(f"{path.name} has no v.position_embd.weight")
    shape = _shape(t)
    return shape[1] if projector == "gemma4v" and len(shape) == 3 else shape[0]


def _check_tensors(
    path: Path,
    gf: GgufFile,
    params: VisionParams,
    deepstack: tuple[int, ...],
    proj_dim: int,
    n_pos: int,
) -> None:
    for name, shape, required in expected_tensors(params, deepstack, proj_dim, n_pos):
        t = gf.tensor(name)
        if t is None:
            if required:
                raise CorruptModelError(f"{path.name} lacks the tensor {name}")
            continue
        if shape is not None and _shape(t) != shape:
            raise CorruptModelError(
                f"{path.name}: {name} is {list(_shape(t))}, but its clip.vision.* settings "
                f"make it {list(shape)} (the file's tensors and metadata disagree)"
            )
        if t.tensor_type.name not in _READABLE:
            raise UnsupportedModelError(f"{path.name}: {name} is {t.tensor_type.name}")
    if params.projector == "qwen3vl_merger":
        side = round(n_pos**0.5)
        if side * side != n_pos:
            raise CorruptModelError(f"{path.name}: {n_pos} positions are not a square grid")
    _check_ranges(path, gf)


def _check_ranges(path: Path, gf: GgufFile) -> None:
    """Tensor data must lie in the data section, each in its own bytes (the reader checked the
    end of each against the file size)."""
    spans = sorted((t.data_offset, t.data_offset + t.n_bytes, t.name) for t in gf.tensors)
    for (_, end, name), (start, _, following) in itertools.pairwise(spans):
        if start < end:
            raise CorruptModelError(
                f"{path.name}: the data of {name} and {following} overlap (sizes that lie)"
            )
    if spans and spans[0][0] < gf.data_offset:
        raise CorruptModelError(f"{path.name}: {spans[0][2]} starts before the tensor data")


def _clamps(gf: GgufFile) -> dict[str, tuple[float, float, float, float]]:
    """Gemma 4's clippable linears: ``<w>.input_min`` ... scalars beside weight ``<w>.weight``."""
    out: dict[str, tuple[float, float, float, float]] = {}
    big = float(np.finfo(np.float32).max)
    for t in gf.tensors:
        if not t.name.endswith(".weight"):
            continue
        stem = t.name[: -len(".weight")]
        bounds = []
        for end, default in (("input_min", -big), ("input_max", big), ("output_min", -big),
                             ("output_max", big)):  # fmt: skip
            s = gf.tensor(f"{stem}.{end}")
            bounds.append(default if s is None else float(np.asarray(s.data).reshape(-1)[0]))
        if bounds != [-big, big, -big, big]:
            out[t.name] = (bounds[0], bounds[1], bounds[2], bounds[3])
    return out
