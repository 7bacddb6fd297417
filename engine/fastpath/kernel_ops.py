"""Which library serves a graph's kernel ops, registered once with its session's options.

Owns `write_mode` (at conversion: whether the graph's kernel nodes are float-reference ones,
``kernel_ops.json`` beside experts.json / matrices.json) and `register` (at opening). A graph
with ``HearthExperts`` / ``HearthMatMul`` nodes (`engine.fastpath.expert_op`, `.dense_op`,
`.matmul_op`) runs them on the kernel's native ONNX Runtime ops (`engine.kernels.native`):
no Python per call. Two cases keep onnxruntime-extensions' Python op: float-reference graphs
(parity tests: their nodes compute in float through gguf-py's dequantize) and a machine where
the native ops cannot serve (``HEARTH_NATIVE_OPS=0``, an ONNX Runtime before 1.16), or a
graph converted before this file existed. Both libraries name their domain ai.onnx.contrib,
so a session registers exactly one (a second registration of a domain fails). Does not own
the ops' weights (the attach functions of those modules map and bind them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.fastpath.expert_op import LAYOUT_FILE, python_op_library
from engine.fastpath.matmul_op import LAYOUT_FILE as MATRICES_FILE
from engine.fastpath.matmul_op import declare
from engine.kernels import native

MODE_FILE = "kernel_ops.json"


def has_kernel_ops(folder: Path) -> bool:
    """Whether the graph in ``folder`` has kernel op nodes (its layouts or mode say so)."""

    return any((folder / f).is_file() for f in (LAYOUT_FILE, MATRICES_FILE, MODE_FILE))


def write_mode(folder: Path, exact: bool, native_ops: bool = False) -> None:
    """At conversion, where the graph has kernel ops (layouts, or ``native_ops``: nodes with
    no weights of their own, ``HearthDeltaNet`` or ``HearthAttention``): whether they are
    float-reference nodes."""
    if native_ops or has_kernel_ops(folder):
        (folder / MODE_FILE).write_text(json.dumps({"exact": exact}), encoding="utf-8")


def native_for(folder: Path) -> bool:
    """Whether the native ops run ``folder``'s graph (not a float-reference one, and they
    can serve here)."""

    try:
        exact = bool(json.loads((folder / MODE_FILE).read_text(encoding="utf-8"))["exact"])
    except (OSError, ValueError, KeyError, TypeError):
        return False  # converted before the mode was recorded: its nodes may be exact ones
    return not exact and native.serves()


def register(folder: Path, options: Any) -> str | None:
    """Register the library that runs ``folder``'s kernel ops with the session ``options``;
    which one ("native" / "python"), or None for a graph without them."""
    if not has_kernel_ops(folder):
        return None
    if native_for(folder):
        options.register_custom_ops_library(native.library_path())
        return "native"

    path = declare(folder) or python_op_library()  # both ops declared before registering
    options.register_custom_ops_library(path)
    return "python"
