"""Synthetic Qwen3-VL language models (GGUF arch ``qwen3vl``, ``qwen3vlmoe``).

llama.cpp's converter writes a Qwen3-VL checkpoint's language model exactly as qwen3's (or
qwen3moe's) tensors under ``general.architecture = qwen3vl`` (``qwen3vlmoe``), with two more
keys: ``rope.dimension_sections`` (interleaved M-RoPE, IMROPE) and ``n_deepstack_layers`` (the
first layers after which an image token's deepstack rows are added). `write_tiny_qwen3vl`
writes a tiny qwen3 (qwen3moe) file with `bench.synth` and renames it so; its transformers twin
is the qwen3 model returned (text only: with one position per token, M-RoPE is plain rope).
Does not own the vision side (`bench.synth.mmproj` writes deepstack mergers).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf import GGUFReader, GGUFValueType, GGUFWriter

from bench.synth.configs import tiny_config
from bench.synth.core import write_tiny_model
from bench.synth.moe import tiny_moe_config, write_moe_model
from bench.synth.plans import Quant

ARCH = "qwen3vl"


def write_tiny_qwen3vl(
    path: Path,
    quant: Quant,
    deepstack: int = 2,
    layers: int = 4,
    sections: tuple[int, ...] | None = None,
    moe: bool = False,
) -> torch.nn.Module | None:
    """Write a tiny random qwen3vl GGUF of ``layers`` layers taking ``deepstack`` deepstack
    rows per image token; return the float32 qwen3 twin of its weights. ``moe``: a qwen3vlmoe
    file (Qwen3-VL-30B-A3B's layout) renamed from a tiny qwen3moe one. ``sections``: M-RoPE
    frequency pairs per axis (t, h, w, e); by default Qwen3-VL's 24/20/20 split scaled to the
    tiny head. The last layer is never a deepstack one, as in every Qwen3-VL (llama.cpp's graph
    keeps only the output rows there)."""
    if not 0 <= deepstack < layers:
        raise ValueError(f"deepstack layers ({deepstack}) must come before the last of {layers}")
    source = "qwen3moe" if moe else "qwen3"
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / f"{source}.gguf"
        model: torch.nn.Module | None
        if moe:
            config = tiny_moe_config(source, num_hidden_layers=layers)
            model = write_moe_model(plain, source, quant, config=config)
        else:
            config = tiny_config(source, num_hidden_layers=layers)
            model = write_tiny_model(plain, source, quant, config=config)
        _rename(plain, path, source, ARCH + ("moe" if moe else ""), deepstack, sections)
    return model


def _rename(
    source: Path,
    target: Path,
    old: str,
    new: str,
    deepstack: int,
    sections: tuple[int, ...] | None,
) -> None:
    """Copy ``source`` (an ``old`` file: qwen3, qwen3moe) as a ``new`` one: every ``old.`` key
    renamed, the two Qwen3-VL keys added, the tensors as they lie."""
    reader = GGUFReader(source)
    writer = GGUFWriter(target, new)
    pairs = 0
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = GGUFValueType(field.types[0])
        sub = GGUFValueType(field.types[-1]) if vtype == GGUFValueType.ARRAY else None
        value: Any = field.contents()
        if key == f"{old}.rope.dimension_count":
            pairs = int(value) // 2
        name = new + key[len(old) :] if key.startswith(f"{old}.") else key
        writer.add_key_value(name, value, vtype, sub_type=sub)
    if not pairs:
        pairs = int(reader.fields[f"{old}.attention.key_length"].contents()) // 2
    split = sections or _sections(pairs)
    writer.add_array(f"{new}.rope.dimension_sections", [int(s) for s in split])
    writer.add_uint32(f"{new}.n_deepstack_layers", deepstack)
    for t in reader.tensors:
        writer.add_tensor(t.name, np.ascontiguousarray(np.array(t.data)), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _sections(pairs: int) -> tuple[int, int, int, int]:
    """Qwen3-VL's [24, 20, 20, 0] of 64 pairs, scaled to ``pairs``."""
    h = w = pairs * 20 // 64
    return (pairs - h - w, h, w, 0)
