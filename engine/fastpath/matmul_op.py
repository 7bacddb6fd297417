"""Attention projections and the output head as a kernel op over the GGUF's own mapped blocks.

Owns the ``HearthMatMul`` op (domain ``ai.onnx.contrib``; input x (…, K) float32, output
(…, N): x times the named matrices, concatenated along N), which runs `engine.kernels`'s
matmul on views of the file, and its pieces:
- `matrices_on` / `projection_names` / `file_matrix_names` / `mapped_matrix_bytes`: which
  matrices run on it (in a file whose experts or MLPs already run on the kernel:
  `engine.fastpath.expert_op`, `.dense_op`; the attention projections and the head, where
  the kernel decodes their type) and what they then cost (their file size: the memory and
  disk estimates).
- Conversion: `kernel_projection` (the node, or None for a type the kernel lacks: the caller
  repacks it for MatMulNBits as before) and `write_matrix_layout` (``matrices.json``).
- Opening: `attach_matrices` maps them (in the one registry of mapped weights,
  `engine.fastpath.mapped`; the op shares `engine.fastpath.expert_op`'s native module and
  its hook, `_dispatch`); `run_matmul` is the op's body.

Why: once a file's experts (or a 7B's MLPs) are read from the mapped file, what ONNX Runtime
still runs is mostly these matrices, in its prepacked form (a float scale, zero point and
block sum per 32 weights on top of the codes: ~1.3-1.4x a Q4_K's bytes, and a separate float
MatMul for each Q4_K block's minimum). Profiled on the 30B-A3B-shaped qwen3moe file, a decode
step spent 22 of its 51 ms of kernels in MatMulNBits and 5 in those offset MatMuls, against 14
ms for all 28 layers' experts; and ONNX Runtime prepacks them at every open. Does not own the
kernel (`engine.kernels`) or the graph around the node (`engine.fastpath.graph`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.fastpath import expert_op
from engine.fastpath.expert_op import DOMAIN
from engine.fastpath.mapped import MAPPED, MappedHandle
from engine.fastpath.resident import resident_spans
from engine.kernels.experts import ACTIVATIONS, INPUT_FORMS, InputForm, QuantMatrix, matmul

if TYPE_CHECKING:
    from engine.fastpath.builder import GraphBuilder

OP_TYPE = "HearthMatMul"
LAYOUT_FILE = "matrices.json"


def kernel_projection(
    g: GraphBuilder,
    x: str,
    names: list[str],
    hint: str,
    form: InputForm = "int8",
    glu: str | None = None,
) -> str | None:
    """x times the named matrices, concatenated, as one ``HearthMatMul`` node (``form``: how
    its activations meet the weights, `engine.kernels.experts.INPUT_FORMS`, the node's
    ``float`` attribute; ``glu``, an `engine.kernels.experts.ACTIVATIONS` name: x
    is a gated MLP's gate | up, and the matrices read act(gate) · up); None where the graph
    does not use the op or a name is not among `g.matrix_names_on`."""
    key = g.matrix_key
    if key is None or not all(n in g.matrix_names_on for n in names):
        return None
    from onnx import helper

    out = g.name(hint)
    attrs: dict[str, Any] = {
        "key": key, "names": ",".join(names), "exact": int(g.accuracy == 0),
        "float": INPUT_FORMS[form], "glu": ACTIVATIONS[glu] if glu else -1,
    }  # fmt: skip
    g.nodes.append(helper.make_node(OP_TYPE, [x], [out], domain=DOMAIN, **attrs))
    g.matrix_names_used.update(names)
    return out


def write_matrix_layout(folder: Path, key: str, reader: Any, names: Iterable[str]) -> None:
    """``folder``/matrices.json: where each matrix the graph's op nodes name lies in the file."""
    tensors = {t.name: t for t in reader.tensors}
    matrices = {}
    for name in sorted(names):
        t = tensors[name]
        cols, rows = (int(s) for s in t.shape)  # ggml order: the row length first
        matrices[name] = {"offset": int(t.data_offset), "type": int(t.tensor_type),
                          "bytes": int(t.n_bytes), "rows": rows, "cols": cols}  # fmt: skip
    text = json.dumps({"key": key, "matrices": matrices})
    (folder / LAYOUT_FILE).write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------ opening


def declare(folder: Path) -> str | None:
    """Declare the Python op in onnxruntime-extensions' module before any session options
    register it (they take the ops declared then), where ``folder``'s graph has it; that
    module's path, or None."""
    return _library() if (folder / LAYOUT_FILE).is_file() else None


def attach_matrices(folder: Path, source: Path, options: Any) -> MappedHandle | None:
    """For a graph with the op (``folder`` has matrices.json): map ``source``'s matrices for
    the op (`engine.fastpath.kernel_ops` registers it with the session ``options``) and bind
    them for the native op; None for any other graph."""

    layout_path = folder / LAYOUT_FILE
    if not layout_path.is_file():
        return None
    layout = json.loads(layout_path.read_text(encoding="utf-8"))
    key = str(layout["key"])
    threads = int(options.intra_op_num_threads) or None  # the kernel's: as ONNX Runtime's
    # the kernel refuses a matrix whose bytes do not hold its rows: nothing stays mapped then
    MAPPED.hold("matrices", key, lambda: _map_matrices(source, layout), threads)
    return MappedHandle("matrices", key)


def mapped_matrix_keys() -> list[str]:
    """The files whose matrices are mapped now (tests check a closed runner frees its own)."""
    return MAPPED.keys("matrices")


def _map_matrices(source: Path, layout: dict[str, Any]) -> dict[str, QuantMatrix]:
    """The layout's matrices over ``source``'s blocks: copied into huge-page memory where
    `engine.fastpath.resident` finds that worth it (a step streams them all), else views of
    the mapped file."""
    entries = list(layout["matrices"].items())
    resident = resident_spans(source, [(int(e["offset"]), int(e["bytes"])) for _, e in entries])
    if resident is not None:
        data = resident.views
    else:
        mapped = np.memmap(source, dtype=np.uint8, mode="r")
        data = [mapped[e["offset"] : e["offset"] + e["bytes"]] for _, e in entries]
    return {
        name: QuantMatrix(e["type"], blocks.reshape(1, -1), e["rows"], e["cols"])
        for (name, e), blocks in zip(entries, data, strict=True)
    }


_lock = threading.Lock()  # declaring the op in the native module happens once


# ------------------------------------------------------------------------ the op


def run_matmul(
    x: np.ndarray,
    key: str,
    names: str,
    exact: bool = False,
    form: InputForm = "int8",
    glu: int = -1,
) -> np.ndarray:
    """The op's body: rows of any leading shape times each named matrix, concatenated (with
    ``glu`` ≥ 0, an `ACTIVATIONS` code, of act(gate) · up from x's two halves first)."""
    from engine.kernels.reference import glu as gated

    try:
        mats = MAPPED.table("matrices", key)
    except KeyError:
        raise RuntimeError(f"no matrices mapped for {key}") from None
    rows = np.ascontiguousarray(x.reshape(-1, x.shape[-1]), np.float32)
    if glu >= 0:
        kinds = [name for name, code in ACTIVATIONS.items() if code == glu]
        if not kinds or rows.shape[-1] % 2:
            raise ValueError(f"HearthMatMul {names}: glu {glu} over a width of {rows.shape[-1]}")
        kind, half = kinds[0], rows.shape[-1] // 2
        rows = np.ascontiguousarray(gated(rows[:, :half], rows[:, half:], kind), np.float32)
    outs = []
    for name in names.split(","):
        m = mats[name]
        if exact:  # float activations: the float reference, as parity tests' graphs want
            from engine.kernels.reference import expert_matrix

            outs.append(rows @ expert_matrix(m, 0).T)
        else:
            threads = MAPPED.threads("matrices", key)
            outs.append(matmul(m, 0, rows, threads=threads, form=form))
    y = outs[0] if len(outs) == 1 else np.concatenate(outs, axis=-1)
    return np.ascontiguousarray(y, np.float32).reshape(*x.shape[:-1], y.shape[-1])


_OP_ID = 0x4D41544D  # the native module hands it back to the hook
_FORM_OF: dict[int, InputForm] = {code: form for form, code in INPUT_FORMS.items()}
_installed: list[bool] = []


def _library() -> str:
    """onnxruntime-extensions' native module (`engine.fastpath.expert_op` loads it), with this
    op declared beside ``HearthExperts`` and one hook that hands each op its own calls."""

    path = expert_op.python_op_library()
    with _lock:
        if not _installed:
            module = expert_op.python_op_module()
            d = module.PyCustomOpDef
            op = d()
            op.op_type, op.obj_id = OP_TYPE, _OP_ID
            op.input_types, op.output_types = [d.dt_float], [d.dt_float]
            op.attrs = {"key": d.dt_string, "names": d.dt_string, "exact": d.dt_int64,
                        "float": d.dt_int64, "glu": d.dt_int64}  # fmt: skip
            module.add_custom_op(op)
            expert_op.keep_op("matmul_op", op)  # the module keeps a pointer to it
            d.install_hooker(_dispatch(expert_op.experts_hook))
            _installed.append(True)
    return path


def _dispatch(experts_hook: Any) -> Any:
    def hook(op_id: int, feed: list[np.ndarray], attrs: dict[str, str]) -> tuple[Any, ...]:
        if op_id != _OP_ID:
            return tuple(experts_hook(op_id, feed, attrs))
        form = _FORM_OF.get(int(attrs["float"]))
        if form is None:
            raise ValueError(f"HearthMatMul: activation form {attrs['float']} is not 0, 1 or 2")
        y = run_matmul(feed[0], str(attrs["key"]), str(attrs["names"]), int(attrs["exact"]) != 0,
                       form, int(attrs["glu"]))  # fmt: skip
        return (op_id, y.shape, y.reshape(-1))

    return hook
