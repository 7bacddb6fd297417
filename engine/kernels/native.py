"""The kernel's native ONNX Runtime ops (`ortops.h`): whether they can serve, and their bindings.

Owns `serves()` (the kernel is built, ONNX Runtime is new enough, not turned off with
``HEARTH_NATIVE_OPS=0``), `library_path()` (what session options register), the decode
thread cap (`set_thread_cap`, which `engine.kernels.governor` drives), and the
bindings from the names graph nodes carry to the mapped weights: `bind_experts` (one MoE
layer's or dense MLP's `ExpertSet`), `bind_matrix` (one `QuantMatrix`) and `unbind`. The C
side keeps raw pointers, so the bound arrays are kept alive here until they are unbound.
Does not own mapping the file (`engine.fastpath.expert_op`, `.matmul_op`) or the graph.

Why native: through onnxruntime-extensions' Python op every kernel call cost ~45 us of
Python, and a decode step makes one per layer's experts or MLP and per projection group (a
30B-A3B: ~150 a token).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from engine import settings
from engine.errors import CorruptModelError
from engine.kernels import build
from engine.kernels.experts import (
    ACTIVATIONS,
    ERRORS,
    ExpertSet,
    QuantMatrix,
    _mat,
    n_experts,
    vectors,
)

MIN_ORT = (1, 16)  # the first ONNX Runtime whose custom-op kernels return a status (V2)
_kept: dict[str, list[Any]] = {}  # binding prefix → the arrays its pointers point into
_lock = threading.Lock()


def serves() -> bool:
    """Whether graphs' kernel ops run natively here (else through the Python op)."""
    if settings.NATIVE_OPS.is_off() or build.library_path() is None:
        return False
    import onnxruntime as ort

    try:
        version = tuple(int(p) for p in ort.__version__.split(".")[:2])
    except ValueError:
        return False
    return version >= MIN_ORT


def library_path() -> str:
    """The kernel library's file, for ``SessionOptions.register_custom_ops_library``."""
    path = build.library_path()
    if path is None:
        raise RuntimeError(build.unavailable_reason() or "the kernel is not available")
    return str(path)


def experts_prefix(key: str) -> str:
    return f"{key}/e/"


def matrices_prefix(key: str) -> str:
    return f"{key}/m/"


def bind_experts(key: str, sets: dict[int, ExpertSet], threads: int | None) -> None:
    """Bind each layer's experts of file ``key`` (nodes name them by key and layer)."""
    lib = _library()
    kept: list[Any] = []
    for layer, s in sets.items():
        gate = s.gate_up if s.gate_up is not None else s.gate
        if gate is None:
            raise ValueError(f"layer {layer} of {key}: experts without gate weights")
        mats = [_mat(gate), _mat(s.up) if s.gate_up is None else None, _mat(s.down)]
        arrays, vecs = vectors(s)
        kept += [mats, arrays, s]
        rc = lib.hearth_bind_experts(
            f"{experts_prefix(key)}{layer}".encode(), n_experts(s),
            *(None if m is None else ctypes.byref(m) for m in mats),
            *(None if v is None else ctypes.byref(v) for v in vecs),
            ACTIVATIONS[s.activation], _threads(threads),
        )  # fmt: skip
        if rc != 0:
            raise _refused(f"the experts of layer {layer}", rc)
    with _lock:
        _kept[experts_prefix(key)] = kept


def bind_matrices(key: str, matrices: dict[str, QuantMatrix], threads: int | None) -> None:
    """Bind each named matrix of file ``key`` (nodes name them by key and tensor names)."""
    lib = _library()
    kept: list[Any] = []
    for name, m in matrices.items():
        mat = _mat(m)
        assert mat is not None  # a matrix given: _mat returns None only for None
        kept += [mat, m]
        rc = lib.hearth_bind_matrix(f"{matrices_prefix(key)}{name}".encode(),
                                    ctypes.byref(mat), _threads(threads))  # fmt: skip
        if rc != 0:
            raise _refused(f"the matrix {name}", rc)
    with _lock:
        _kept[matrices_prefix(key)] = kept


def unbind(prefix: str) -> None:
    """Mark the bindings under ``prefix`` dead (their file is about to be unmapped): a
    session still running them then fails with a message, never reads unmapped memory."""
    lib = build.library()
    if lib is not None:
        lib.hearth_unbind(prefix.encode())
    with _lock:
        _kept.pop(prefix, None)


def set_thread_cap(threads: int) -> None:
    """Cap the threads of the ops' decode-sized calls at ``threads`` (0: no cap), for every
    session of this process (`engine.kernels.governor` picks it)."""
    _library().hearth_set_thread_cap(ctypes.c_int(int(threads)))


def set_op_threads(threads: int) -> None:
    """The threads the ops without a binding of their own (HearthAttention, the DeltaNet
    ops) run on, for every session of this process: a runner sets them as it opens."""
    _library().hearth_set_op_threads(ctypes.c_int(int(threads)))


def set_pool_spin(us: int) -> None:
    """How long the kernel pool's idle workers spin before they sleep, in microseconds, for
    every caller in this process (`engine.kernels.governor.worker_spin` picks it)."""
    _library().hearth_pool_spin(ctypes.c_int(int(us)))


def pool_spin() -> int:
    """The spin `set_pool_spin` last set, in microseconds (the pool's own until then)."""
    return int(_library().hearth_pool_spin_us())


def thread_cap() -> int:
    """The cap `set_thread_cap` last set (0: none)."""
    return int(_library().hearth_thread_cap())


def kernel_threads(threads: int | None) -> int:
    """The threads the ops' bindings get for a runner asking for ``threads`` (None: cores)."""
    return _threads(threads)


def _refused(what: str, rc: int) -> Exception:
    """The kernel's refusal to bind ``what``: MemoryError when out of memory, else
    CorruptModelError naming the reason (a file whose tensors disagree)."""
    if rc == -3:
        return MemoryError(f"binding {what} to the kernel's op: out of memory")
    return CorruptModelError(f"the kernel refuses {what}: {ERRORS.get(rc, rc)}")


def _library() -> ctypes.CDLL:
    lib = build.library()
    if lib is None:
        raise RuntimeError(build.unavailable_reason() or "the kernel is not available")
    return lib


def _threads(threads: int | None) -> int:
    from engine.kernels.experts import _cores

    return int(threads or _cores())
