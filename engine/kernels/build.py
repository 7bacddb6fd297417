"""Compiling and loading the C expert kernel (`experts.c`) for this machine.

Owns `library()`: the loaded kernel, compiled once per source and machine with the system's C
compiler into ``<cache>/kernels/`` (``-O3 -march=native``: the host's own SIMD, AVX2 or
AVX-512, since the library never leaves this machine), or None with the reason in
`unavailable_reason()`; and `available()`. A packaged app ships the library built at package
time beside the source, which is found before compiling. ``HEARTH_EXPERT_KERNEL=0`` turns the
kernel off (the fast path then runs experts through ONNX Runtime as before). Does not own the
kernel's Python signature (`engine.kernels.experts`).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from engine import settings
from engine.cache_folders import cache_root

SOURCE = Path(__file__).with_name("experts.c")  # includes its headers (one translation unit)
FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=gnu11")
COMPILE_TIMEOUT_S = 120
SHIPPED = "_experts.so"  # built by `make package` (packaging/hearth.spec) for any AVX2 CPU
SHIP_FLAGS = ("-O3", "-march=x86-64-v3", "-mtune=generic", "-fopenmp", "-shared", "-fPIC",
              "-std=gnu11")  # fmt: skip
SHIP_NEEDS = ("avx2", "fma", "f16c")  # what x86-64-v3 code needs from the CPU that runs it
_reason: list[str] = []
_path: list[Path] = []


def available() -> bool:
    """Whether the expert kernel can run here (compiled, loaded, not turned off)."""
    return library() is not None


def unavailable_reason() -> str | None:
    """Why `available()` is False, or None."""
    library()
    return _reason[0] if _reason else None


@cache
def library() -> ctypes.CDLL | None:
    """The kernel library, compiled on first use; None where it cannot be (see the reason)."""
    if settings.EXPERT_KERNEL.is_off():
        _reason.append("turned off by HEARTH_EXPERT_KERNEL=0")
        return None
    try:
        path = _compiled()
        lib = _load(path)
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        _reason.append(f"the expert kernel could not be built: {exc}")
        # Said once, where it is not silent: every model then runs on ONNX Runtime's own
        # kernels, slower and bigger for MoE and large files.
        logging.getLogger(__name__).warning("%s; ONNX Runtime's kernels run instead", _reason[0])
        return None
    _path.append(path)
    return lib


def library_path() -> Path | None:
    """The file `library()` loaded (ONNX Runtime registers its ops from the same file, and
    so shares its state: `engine.kernels.native`); None where it is not available."""
    return _path[0] if library() is not None and _path else None


def _key() -> str:
    h = hashlib.sha256()
    for part in sources():
        h.update(part.read_bytes())
    h.update(" ".join(FLAGS).encode())
    h.update(platform.machine().encode())
    h.update(_cpu_flags().encode())  # -march=native: a copied cache must not run elsewhere
    return h.hexdigest()[:16]


def sources() -> list[Path]:
    """experts.c and the headers it includes (one translation unit)."""
    return [SOURCE, *sorted(SOURCE.parent.glob("*.h"))]


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    return platform.processor()


def _compiled() -> Path:
    shipped = SOURCE.with_name(SHIPPED)
    if shipped.exists() and all(f in _cpu_flags().split() for f in SHIP_NEEDS):
        return shipped
    target = cache_root() / "kernels" / f"experts-{_key()}.so"
    if target.exists():
        return target
    compile_to(target, FLAGS)
    return target


def compile_to(target: Path, flags: tuple[str, ...]) -> None:
    """Compile `SOURCE` with ``flags`` into ``target``, atomically (another process may be
    compiling the same); RuntimeError with the compiler's message when it fails."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler (cc or gcc) on this machine")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        done = subprocess.run(
            [compiler, *flags, "-o", str(out), str(SOURCE), "-lm"],
            capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-2000:] or f"{compiler} failed")
        os.replace(out, target)


def _set_grids(lib: ctypes.CDLL) -> None:
    """Hand the IQ types' codebooks to the library: gguf-py's grids (the values ggml uses),
    as int8; until then the library has no decoder for those types."""
    import numpy as np
    from gguf import quants

    grids = []
    for kind in (quants.IQ2_XXS, quants.IQ2_XS, quants.IQ2_S, quants.IQ3_XXS, quants.IQ3_S):
        kind.init_grid()  # type: ignore[no-untyped-call]
        grids.append(np.ascontiguousarray(np.asarray(kind.grid).reshape(-1), dtype=np.int8))
    grids.append(np.array(quants.IQ4_NL.kvalues, dtype=np.int8))
    lib.hearth_set_grids(*(g.ctypes.data for g in grids))  # copied: the arrays may go


if __name__ == "__main__":  # packaging: python -m engine.kernels.build [TARGET]
    import sys

    where = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE.with_name(SHIPPED)
    compile_to(where, SHIP_FLAGS)
    print(where)


def _load(path: Path) -> ctypes.CDLL:
    # OpenMP's idle threads spin ~300k rounds by default between a layer's regions, on
    # cores that ONNX Runtime's threads need for the rest of the step; a short spin, then a
    # sleep. Read once, when libgomp loads, so only a process that has none loaded yet.
    os.environ.setdefault("GOMP_SPINCOUNT", "20000")
    lib = ctypes.CDLL(str(path))
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.hearth_supports.argtypes = [i64]
    lib.hearth_supports.restype = ctypes.c_int
    lib.hearth_routed_ffn.argtypes = [ptr, i64, ptr, ptr, i64, i64, ptr, ptr, ptr,
                                      ptr, ptr, ptr, ptr, i64, i64, ptr]  # fmt: skip
    lib.hearth_routed_ffn.restype = ctypes.c_int
    for matmul in (lib.hearth_matmul, lib.hearth_matmul_float):
        matmul.argtypes = [ptr, i64, ptr, i64, ptr, i64]
        matmul.restype = ctypes.c_int
    lib.hearth_set_grids.argtypes = [ptr] * 6
    lib.hearth_set_grids.restype = None
    lib.hearth_bind_experts.argtypes = [ctypes.c_char_p, i64, ptr, ptr, ptr,
                                        ptr, ptr, ptr, ptr, i64, i64]  # fmt: skip
    lib.hearth_bind_experts.restype = ctypes.c_int
    lib.hearth_bind_matrix.argtypes = [ctypes.c_char_p, ptr, i64]
    lib.hearth_bind_matrix.restype = ctypes.c_int
    lib.hearth_unbind.argtypes = [ctypes.c_char_p]
    lib.hearth_unbind.restype = None
    _set_grids(lib)
    return lib
