"""Which GGML type each tensor of a synthetic GGUF gets: a llama.cpp mix, or the caller's choice.

Owns llama.cpp's `llama_tensor_get_type` rules (src/llama-quant.cpp) for the mixes benchmarks
need (Q4_K_M, Q5_K_M, Q6_K, Q4_0, Q8_0; the low-bit IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S mixes
as llama-quantize lays them out without an imatrix; MXFP4_MOE: experts MXFP4, the rest Q8_0),
in which output and tied token_embd take the output type,
attn_v / attn_qkv / ffn_down get Q6_K on "use_more_bits" layers, and a row length that is not a
multiple of the block size falls back (Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K->Q4_0,
IQ2_*/IQ3_*/IQ4_XS->IQ4_NL, else F16). Also a single GGML type for every matrix, or a
{glob: type} dict.
Does not own making the bytes (`synth_blocks`) or writing the file (`synth`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

Q = GGMLQuantizationType
Quant = str | Mapping[str, str]
# A plan name -> llama.cpp's default type for that ftype (llama_ftype_get_default_type).
PLANS = {"Q4_K_M": Q.Q4_K, "Q5_K_M": Q.Q5_K, "Q6_K": Q.Q6_K, "Q4_0": Q.Q4_0, "Q8_0": Q.Q8_0}
LOW_BIT_PLANS = {  # see `_low_bit_type`
    "IQ2_XXS": Q.IQ2_XXS,
    "IQ2_XS": Q.IQ2_XS,
    "IQ2_S": Q.IQ2_S,
    "IQ3_XXS": Q.IQ3_XXS,
    "IQ3_S": Q.IQ3_S,
    "MXFP4_MOE": Q.MXFP4,
}
PLANS.update(LOW_BIT_PLANS)
FALLBACK = {
    Q.Q4_K: Q.Q5_0,
    Q.Q5_K: Q.Q5_1,
    Q.Q6_K: Q.Q8_0,
    Q.Q2_K: Q.Q4_0,
    Q.Q3_K: Q.Q4_0,
    Q.IQ4_XS: Q.IQ4_NL,
    Q.IQ2_XXS: Q.IQ4_NL,
    Q.IQ2_XS: Q.IQ4_NL,
    Q.IQ2_S: Q.IQ4_NL,
    Q.IQ3_XXS: Q.IQ4_NL,
    Q.IQ3_S: Q.IQ4_NL,
}
_LAYER = re.compile(r"^blk\.(\d+)\.")


def tensor_types(
    tensors: Sequence[tuple[str, tuple[int, ...]]], quant: Quant
) -> dict[str, GGMLQuantizationType]:
    """GGUF name -> type for ``tensors`` ((name, numpy shape) in file order) under ``quant``.

    ``quant`` is a plan name (llama.cpp semantics: "Q4_0" keeps output in Q6_K, as
    llama-quantize does), any other GGML type name (every matrix in it), or a dict of
    fnmatch patterns -> type names (first match wins). 1-D tensors and norms stay F32.
    """
    tied = all(name != "output.weight" for name, _ in tensors)
    n_attn_v = sum(_is_attn_v(name) for name, _ in tensors)
    n_layers = len({m.group(1) for name, _ in tensors if (m := _LAYER.match(name))})
    types = {}
    for name, shape in tensors:
        if not _quantisable(name, shape):
            types[name] = Q.F32
            continue
        if isinstance(quant, str) and quant in LOW_BIT_PLANS:
            model = _Model(tied, n_layers, *_gqa_experts(tensors))
            types[name] = fallback(_low_bit_type(name, shape, quant, model), shape[-1])
            continue
        wanted = _wanted(name, quant, tied, n_attn_v, n_layers, shape[-1])
        types[name] = fallback(wanted, shape[-1])
    return types


def fallback(qtype: GGMLQuantizationType, cols: int) -> GGMLQuantizationType:
    """llama.cpp's `tensor_type_fallback`: a type whose block size divides ``cols``."""
    block = GGML_QUANT_SIZES[qtype][0]
    if cols % block == 0:
        return qtype
    alt = FALLBACK.get(qtype, Q.F16)
    return alt if cols % GGML_QUANT_SIZES[alt][0] == 0 else Q.F16


def file_type(quant: Quant) -> int:
    """general.file_type for ``quant`` (LlamaFileType; GUESSED for a dict)."""
    if not isinstance(quant, str):
        return int(LlamaFileType.GUESSED)
    if quant == "F32":
        return int(LlamaFileType.ALL_F32)
    for name in (f"MOSTLY_{quant}", f"MOSTLY_{quant}_S"):
        if name in LlamaFileType.__members__:
            return int(LlamaFileType[name])
    return int(LlamaFileType.GUESSED)


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp's choice of layers that get more bits: first/last eighth, every third."""
    eighth = n_layers // 8
    return i_layer < eighth or i_layer >= 7 * n_layers // 8 or (i_layer - eighth) % 3 == 2


def _quantisable(name: str, shape: tuple[int, ...]) -> bool:
    return len(shape) >= 2 and name.endswith("weight") and "_norm.weight" not in name


def _is_attn_v(name: str) -> bool:
    return "attn_v.weight" in name or "attn_qkv.weight" in name


def _wanted(
    name: str, quant: Quant, tied: bool, n_attn_v: int, n_layers: int, cols: int
) -> GGMLQuantizationType:
    if not isinstance(quant, str):
        return _from_patterns(name, quant)
    if quant not in PLANS:
        return _type(quant)
    default = PLANS[quant]
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        if cols % GGML_QUANT_SIZES[default][0] != 0 or default == Q.Q8_0:
            return Q.Q8_0
        return Q.Q6_K
    m = _LAYER.match(name)
    if m is None or quant not in ("Q4_K_M", "Q5_K_M"):
        return default
    layer = int(m.group(1))
    if _is_attn_v(name) and use_more_bits(layer, n_attn_v):
        return Q.Q6_K
    if "ffn_down" in name and use_more_bits(layer, n_layers):
        return Q.Q6_K
    return default


def _from_patterns(name: str, patterns: Mapping[str, str]) -> GGMLQuantizationType:
    for pattern, type_name in patterns.items():
        if fnmatchcase(name, pattern):
            return _type(type_name)
    raise ValueError(f"no pattern in {list(patterns)} matches tensor {name!r}")


def _type(type_name: str) -> GGMLQuantizationType:
    if type_name not in Q.__members__:
        raise ValueError(
            f"unknown quant {type_name!r}: use a plan ({', '.join(PLANS)}) or a GGML type"
        )
    return Q.__members__[type_name]


# ---------------------------------------------------------------- low-bit mixes


@dataclass(frozen=True)
class _Model:
    tied: bool
    n_layers: int
    n_gqa: int  # query heads per KV head (attn_q rows / attn_k rows)
    n_expert: int


def _gqa_experts(tensors: Sequence[tuple[str, tuple[int, ...]]]) -> tuple[int, int]:
    """(n_gqa, n_expert) as llama.cpp's hparams would say, read off the tensor shapes."""
    shapes = dict(tensors)
    q, k = shapes.get("blk.0.attn_q.weight"), shapes.get("blk.0.attn_k.weight")
    n_gqa = q[0] // k[0] if q and k else 1
    experts = [shape[0] for name, shape in tensors if "_exps." in name and len(shape) == 3]
    return n_gqa, max(experts, default=0)


def _low_bit_type(name: str, shape: tuple[int, ...], quant: str, m: _Model) -> GGMLQuantizationType:
    """llama.cpp's choice for the IQ2/IQ3 and MXFP4_MOE mixes (no imatrix)."""
    default = LOW_BIT_PLANS[quant]
    if name == "output.weight" or (m.tied and name == "token_embd.weight"):
        if quant == "MXFP4_MOE" or shape[-1] % GGML_QUANT_SIZES[default][0]:
            return Q.Q8_0
        return Q.Q6_K if quant == "IQ3_S" else Q.Q5_K
    if quant == "MXFP4_MOE":
        return Q.MXFP4 if len(shape) == 3 else Q.Q8_0
    if name == "token_embd.weight":
        return {"IQ2_XXS": Q.Q2_K, "IQ2_XS": Q.Q2_K, "IQ2_S": Q.IQ3_S, "IQ3_XXS": Q.IQ3_S}.get(
            quant, default
        )
    layer = int(match.group(1)) if (match := _LAYER.match(name)) else 0
    if quant.startswith("IQ2"):
        return _iq2_type(name, quant, layer, m) or default
    return _iq3_type(name, quant, layer, m) or default


def _iq2_type(name: str, quant: str, layer: int, m: _Model) -> GGMLQuantizationType | None:
    richer = Q.IQ3_S if quant == "IQ2_S" else Q.Q2_K
    if _is_attn_v(name):
        return Q.Q4_K if m.n_gqa >= 4 or m.n_expert >= 4 else richer
    if m.n_expert == 8 and "attn_k.weight" in name:
        return Q.Q4_K
    if "ffn_down" in name:
        return richer if layer < m.n_layers // 8 else None
    if "attn_output.weight" in name:
        return Q.Q5_K if m.n_expert == 8 else (Q.IQ3_S if quant == "IQ2_S" else None)
    return None


def _iq3_type(name: str, quant: str, layer: int, m: _Model) -> GGMLQuantizationType | None:
    xxs = quant == "IQ3_XXS"
    if _is_attn_v(name):
        if m.n_expert == 8:
            return Q.Q8_0
        if m.n_gqa >= 4:
            return Q.Q4_K
        return Q.IQ3_S if xxs else None
    if "attn_k.weight" in name or "attn_q.weight" in name:
        if m.n_expert == 8 and "attn_k.weight" in name:
            return Q.Q8_0
        return Q.IQ2_S if xxs else None
    if "ffn_down" in name and xxs:
        return Q.Q4_K if layer < m.n_layers // 8 else Q.Q3_K
    if "attn_output.weight" in name:
        return Q.Q5_K if m.n_expert == 8 else (Q.IQ3_S if xxs else None)
    return None
