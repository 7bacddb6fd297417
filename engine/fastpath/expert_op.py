"""The routed experts of a MoE layer as one ONNX Runtime custom op over the mapped GGUF blocks.

Owns the ``HearthExperts`` op (domain ``ai.onnx.contrib``; inputs x (…, H) float32, the
rows' top-k expert ids (…, k) int64 and their weights (…, k) float32; output (…, H)), which
calls `engine.kernels.experts.routed_ffn` on the layer's `ExpertSet`: views of the GGUF file
as it lies on disk, mapped, never repacked. So a MoE file's experts (most of its bytes) cost
their file size in memory rather than MatMulNBits' repacked ~1.65x plus its prepacking at
every open, and the converted ``weights.bin`` holds everything but them.

The pieces, in the order a model meets them:
- Whether the op runs a file's experts, and what they then cost, is the kernel plan's
  (`engine.fastpath.plan.kernel_runs`, `.mapped_expert_bytes`): ``HEARTH_EXPERT_KERNEL=0``
  or a missing kernel keeps the nested-``If`` MatMulNBits experts of `engine.fastpath.moe`.
- Conversion: `expert_key`; `write_layout` records where each layer's expert tensors lie in the file
  (``experts.json`` beside the graph) under a key naming the file's content.
- Opening: `attach_experts` maps the file's experts into a process-wide registry (key,
  layer) → `ExpertSet` (`engine.fastpath.mapped`, the one registry of mapped weights), shared
  by the runners of one file and dropped when the last of them is collected (`MappedHandle`),
  and binds them for the native op (`engine.kernels.native`).

The op is onnxruntime-extensions' Python-op mechanism, loaded without its package
``__init__``, which imports onnx, torch and transformers and sets a protobuf environment
variable: only its native module is loaded, and the call protocol (inputs as numpy arrays,
one hook returning (id, shape, flat output)) is driven from here. One call per MoE layer
costs ~45 us of Python around the kernel. Does not own routing (the graph's TopK/Softmax,
`engine.fastpath.moe`) or the expert arithmetic (`engine.kernels`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from engine import settings
from engine.cache_folders import gguf_cache_key
from engine.fastpath.mapped import MAPPED, MappedHandle
from engine.fastpath.plan import is_expert_tensor, kernel_runs
from engine.kernels.experts import ExpertSet, QuantMatrix, routed_ffn

OP_TYPE = "HearthExperts"
DOMAIN = "ai.onnx.contrib"
LAYOUT_FILE = "experts.json"
MATRICES = ("gate", "up", "gate_up", "down")
VECTORS = {"gate_bias": "gate_exps.bias", "up_bias": "up_exps.bias",
           "down_bias": "down_exps.bias", "out_scale": "down_exps.scale"}  # fmt: skip
_EXTENSIONS = "onnxruntime_extensions"
_NATIVE = f"{_EXTENSIONS}._extensions_pydll"


# ------------------------------------------------------------------------ conversion


def expert_key(reader: Any, hp: Any, source: Path) -> str | None:
    """The op's key for this file (its content's identity), or None: no op for its experts
    (a dense file, the op off here, or an expert type the kernel lacks)."""
    if not hp.has_experts or not hp.n_experts:
        return None
    types = [int(t.tensor_type) for t in reader.tensors
             if is_expert_tensor(t.name) and t.name.endswith(".weight")]  # fmt: skip
    if not types or not kernel_runs(types):
        return None
    try:
        python_op_library()  # the op's host module must load here, else the If graph runs
    except (ImportError, OSError, RuntimeError, StopIteration):
        return None

    return f"{source.stem}-{gguf_cache_key(source)}"


def write_layout(folder: Path, key: str, reader: Any, hp: Any, activation: str) -> None:
    """``folder``/experts.json: per MoE layer, where each expert tensor lies in the file."""
    tensors = {t.name: t for t in reader.tensors}
    layers: dict[str, dict[str, Any]] = {}
    for i in range(hp.n_layers):
        entry: dict[str, Any] = {}
        for kind in MATRICES:
            t = tensors.get(f"blk.{i}.ffn_{kind}_exps.weight")
            if t is not None:
                cols, rows, n_exp = (int(s) for s in t.shape)
                entry[kind] = _place(t) | {"rows": rows, "cols": cols, "experts": n_exp}
        for field, suffix in VECTORS.items():
            t = tensors.get(f"blk.{i}.ffn_{suffix}")
            if t is not None:
                entry[field] = _place(t) | {"shape": [int(s) for s in reversed(t.shape)]}
        if entry:
            layers[str(i)] = entry
    text = json.dumps({"key": key, "activation": activation, "layers": layers})
    (folder / LAYOUT_FILE).write_text(text, encoding="utf-8")


def _place(t: Any) -> dict[str, int]:
    return {"offset": int(t.data_offset), "type": int(t.tensor_type), "bytes": int(t.n_bytes)}


# ------------------------------------------------------------------------ opening


def attach_experts(folder: Path, source: Path, options: Any) -> MappedHandle | None:
    """For a graph with the op (``folder`` has experts.json): map ``source``'s experts for
    the op (`engine.fastpath.kernel_ops` registers it with the session ``options``); None for
    any other graph."""
    layout_path = folder / LAYOUT_FILE
    if not layout_path.is_file():
        return None
    layout = json.loads(layout_path.read_text(encoding="utf-8"))
    key = str(layout["key"])
    threads = int(options.intra_op_num_threads) or None  # the kernel's: as ONNX Runtime's
    _REGISTRY.hold(key, lambda: _map_experts(source, layout), threads)
    return MappedHandle("experts", key)


def _map_experts(source: Path, layout: dict[str, Any]) -> dict[int, ExpertSet]:
    """Each layer's `ExpertSet`, its arrays views of one read-only map of ``source``."""
    mapped = np.memmap(source, dtype=np.uint8, mode="r")
    sets: dict[int, ExpertSet] = {}
    spans: list[tuple[int, int]] = []
    for layer, entry in layout["layers"].items():
        parts: dict[str, Any] = {"activation": layout["activation"]}
        for kind in MATRICES:
            if kind in entry:
                e = entry[kind]
                data = mapped[e["offset"] : e["offset"] + e["bytes"]].reshape(e["experts"], -1)
                parts[kind] = QuantMatrix(e["type"], data, e["rows"], e["cols"])
                spans.append((e["offset"], e["bytes"]))
        for field in VECTORS:
            if field in entry:
                parts[field] = _vector(mapped, entry[field])
        sets[int(layer)] = ExpertSet(**parts)
    _populate(mapped, spans)
    return sets


MADV_WILLNEED, MADV_POPULATE_READ = 3, 22  # Linux; the latter since 5.14


def _populate(mapped: np.ndarray, spans: list[tuple[int, int]]) -> None:
    """Map the experts' pages now, while the model opens, rather than at their first use.

    Otherwise the first prompt after opening takes one page fault per 4 KiB of every expert
    it routes to: on the qwen3moe bench file (page cache warm) its 128-token prefill took
    3.1 s against 0.97 s for the next one, while populating all 3.3 GB of experts in one
    call takes 0.3 s (0.19 s CPU); a background thread instead competed with that first
    prefill (2.75 s). A cold file is read once, in order, as llama.cpp reads it at load. The
    experts are counted in the memory estimate anyway, and stay clean file pages the kernel
    may drop under pressure. ``HEARTH_EXPERT_POPULATE=0`` skips it (pages map on first use).
    """
    if sys.platform.startswith("linux") and not settings.EXPERT_POPULATE.is_off():
        _advise(mapped, spans)


def _advise(mapped: np.ndarray, spans: list[tuple[int, int]]) -> None:
    """madvise each span of ``mapped`` (kept alive by this call) to be populated now."""
    import ctypes
    import mmap

    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    base = int(mapped.ctypes.data)  # the map starts at the file's start: page-aligned
    for offset, length in spans:
        start = offset - offset % mmap.PAGESIZE
        size = ctypes.c_size_t(length + offset - start)
        if madvise(ctypes.c_void_p(base + start), size, MADV_POPULATE_READ) != 0:
            madvise(ctypes.c_void_p(base + start), size, MADV_WILLNEED)  # read ahead only


def _vector(mapped: np.ndarray, e: dict[str, Any]) -> np.ndarray:
    """A float bias or scale (experts first); float32 in the file is a view, others a copy."""
    from gguf import GGMLQuantizationType as Q

    raw = mapped[e["offset"] : e["offset"] + e["bytes"]]
    dtype = {Q.F32: np.float32, Q.F16: np.float16}.get(Q(e["type"]))
    if dtype is None:
        from gguf.quants import dequantize

        values = np.asarray(dequantize(np.asarray(raw), Q(e["type"])), np.float32)
        return values.reshape(e["shape"])
    return np.asarray(raw.view(dtype).reshape(e["shape"]), np.float32)


class _Experts:
    """The experts' view of the one registry of mapped weights (`engine.fastpath.mapped`)."""

    def hold(self, key: str, load: Any, threads: int | None = None) -> None:
        MAPPED.hold("experts", key, load, threads)

    def get(self, key: str, layer: int) -> ExpertSet:
        try:
            found: ExpertSet = MAPPED.table("experts", key)[layer]
        except (KeyError, RuntimeError):
            raise RuntimeError(f"no experts mapped for layer {layer} of {key}") from None
        return found


_REGISTRY = _Experts()


def mapped_keys() -> list[str]:
    """The files whose experts are mapped now (tests check a closed runner frees its own)."""
    return MAPPED.keys("experts")


# ------------------------------------------------------------------------ the op


def run_experts(
    x: np.ndarray, ids: np.ndarray, weights: np.ndarray, at: tuple[str, int], exact: bool = False
) -> Any:
    """The op's body: rows of any leading shape through `routed_ffn` for ``at`` = (key,
    layer), shaped back. ``exact``: float activations (the float reference, as a graph built
    for parity tests wants; the kernel quantizes activations to 8 bits, as llama.cpp does)."""

    hidden, k = x.shape[-1], ids.shape[-1]
    rows = np.ascontiguousarray(x.reshape(-1, hidden), np.float32)
    ids, weights = ids.reshape(-1, k), weights.reshape(-1, k)
    if len(ids) == 1 < len(rows):  # one choice for every row: a dense MLP (fastpath.dense_op)
        ids, weights = (np.broadcast_to(a, (len(rows), k)) for a in (ids, weights))
    args = (rows, ids, weights, _REGISTRY.get(*at))
    if exact:
        from engine.kernels.reference import routed_ffn_reference

        y = routed_ffn_reference(*args)
    else:
        y = routed_ffn(*args, threads=MAPPED.threads("experts", at[0]))
    return np.ascontiguousarray(y, np.float32).reshape(x.shape)


_OP_ID = 0x4E415254  # any id; the native module hands it back to the hook
_native: dict[str, Any] = {}  # the loaded module and the op definition it keeps a pointer to
_native_lock = threading.Lock()


def python_op_library() -> str:
    """The path of onnxruntime-extensions' native module (the ops' Python form, registered
    with a session's options), loaded once with ``HearthExperts`` declared."""
    with _native_lock:
        if "path" not in _native:
            module, path = _load_native()
            op = module.PyCustomOpDef()
            op.op_type, op.obj_id = OP_TYPE, _OP_ID
            d = module.PyCustomOpDef
            op.input_types = [d.dt_float, d.dt_int64, d.dt_float]
            op.output_types = [d.dt_float]
            op.attrs = {"key": d.dt_string, "layer": d.dt_int64, "exact": d.dt_int64}
            module.add_custom_op(op)
            d.install_hooker(experts_hook)
            _native.update(module=module, op=op, path=path)
        return str(_native["path"])


def python_op_module() -> Any:
    """onnxruntime-extensions' native module, loaded by `python_op_library` (where
    `engine.fastpath.matmul_op` declares its own op beside this one)."""
    python_op_library()
    return _native["module"]


def keep_op(name: str, op: Any) -> None:
    """Keep an op definition alive: the native module holds only a pointer to it."""
    _native[name] = op


def _load_native() -> tuple[Any, str]:
    import sys

    found = sys.modules.get(_NATIVE)
    if found is not None:
        return found, str(found.__file__)
    spec = importlib.util.find_spec(_EXTENSIONS)
    if spec is None or spec.origin is None:
        raise RuntimeError("onnxruntime-extensions is not installed")
    folder = Path(spec.origin).parent
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    path = next(
        str(p)
        for p in folder.glob("_extensions_pydll*")
        if any(p.name.endswith(s) for s in suffixes)
    )
    loader = importlib.machinery.ExtensionFileLoader(_NATIVE, path)
    module_spec = importlib.util.spec_from_file_location(_NATIVE, path, loader=loader)
    assert module_spec is not None
    module = importlib.util.module_from_spec(module_spec)
    loader.exec_module(module)
    sys.modules[_NATIVE] = module
    return module, path


def experts_hook(op_id: int, feed: list[np.ndarray], attrs: dict[str, str]) -> tuple[Any, ...]:
    """What the native module calls for each op run: (id, output shape, flat output)."""
    x, ids, weights = feed
    at = (str(attrs["key"]), int(attrs["layer"]))
    y = run_experts(x, ids, weights, at, exact=int(attrs["exact"]) != 0)
    return (op_id, y.shape, y.reshape(-1))
