"""Compiling, caching and loading the C expert kernel (`experts.c`) for this machine.

Owns `library()`: the loaded kernel, compiled once per source and machine with the system's C
compiler (``-O3 -march=native``: the host's own SIMD, AVX2 or AVX-512, since the library never
leaves this machine), or None with the reason in `unavailable_reason()`; and `available()`.
A packaged app ships the library built at package time beside the source (`SHIPPED`), used
when this CPU runs it and it was built from these very sources. ``HEARTH_EXPERT_KERNEL=0``
turns the kernel off (the fast path then runs experts through ONNX Runtime as before). Does
not own the kernel's Python signature (`engine.kernels.experts`).

The cache (``<cache>/kernels/``) trusts nothing it finds (issue 34 A12, issue 35 item 7):
- each build is a folder ``experts-<key>/`` (key: the sources, flags, machine and CPU),
  published like every cache folder (`engine.cache_folders.publish_folder`), holding the
  library (a name of its own per build) and its sha256; the library also carries its key as text
  (``hearth_build_key``);
- before a library is loaded, its bytes are checked against both: a damaged, truncated or
  stale file (a leftover ``_experts.so`` or build of older sources) is never dlopened;
- one that still fails to load, or lacks a symbol, is discarded and built again, once;
- after a build, only the current and the most recently used other build stay (another
  process may still run an older checkout's); older ones, and flat ``experts-<key>.so`` files
  of earlier versions, are deleted.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import time
from functools import cache
from pathlib import Path

from engine import settings
from engine.cache_folders import STALE_TMP_S, cache_root, discard_folder, publish_folder
from engine.kernels import platforms

SOURCE = Path(__file__).with_name("experts.c")  # includes its headers (one translation unit)
FLAGS = ("-O3", "-march=native", "-pthread", "-shared", "-fPIC", "-std=gnu11")
COMPILE_TIMEOUT_S = 120
SHIPPED = "_experts.so"  # built by `make package` (packaging/hearth.spec) for any AVX2 CPU
SHIP_FLAGS = ("-O3", "-march=x86-64-v3", "-mtune=generic", "-pthread", "-shared", "-fPIC",
              "-std=gnu11")  # fmt: skip
SHIP_NEEDS = ("avx2", "fma", "f16c")  # what x86-64-v3 code needs from the CPU that runs it
DIGEST = "library.sha256"  # a build folder's record: "<sha256> <library's file name>"
SYMBOLS = ("hearth_supports", "hearth_routed_ffn", "hearth_matmul", "hearth_matmul_float",
           "hearth_set_grids", "hearth_bind_experts", "hearth_bind_matrix", "hearth_unbind",
           "hearth_set_thread_cap", "hearth_thread_cap", "hearth_pool_delay", "hearth_pool_spin",
           "hearth_pool_spin_us",
           "hearth_pool_wait", "RegisterCustomOps")  # fmt: skip
_reason: list[str] = []
_path: list[Path] = []
_log = logging.getLogger(__name__)


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
    refusal = platforms.kernel_refusal(platforms.facts(SOURCE.with_name(SHIPPED)))
    if refusal is not None:  # ARM, no AVX2, no compiler, macOS's clang: ONNX Runtime's kernels
        _reason.append(refusal)
        return None
    try:
        path, lib = _open()
    except (OSError, AttributeError, subprocess.SubprocessError, RuntimeError) as exc:
        _reason.append(f"the expert kernel could not be built: {exc}")
        # Said once, where it is not silent: every model then runs on ONNX Runtime's own
        # kernels, slower and bigger for MoE and large files.
        _log.warning("%s; ONNX Runtime's kernels run instead", _reason[0])
        return None
    _path.append(path)
    return lib


def library_path() -> Path | None:
    """The file `library()` loaded (ONNX Runtime registers its ops from the same file, and
    so shares its state: `engine.kernels.native`); None where it is not available."""
    return _path[0] if library() is not None and _path else None


def sources() -> list[Path]:
    """experts.c and the headers it includes (one translation unit)."""
    return [SOURCE, *sorted(SOURCE.parent.glob("*.h"))]


def build_key(flags: tuple[str, ...] = FLAGS) -> str:
    """The identity of a build: the sources and ``flags``, and for ``-march=native`` builds
    the machine and its CPU (a copied cache must not run elsewhere)."""
    h = hashlib.sha256()
    for part in sources():
        h.update(part.read_bytes())
    h.update(" ".join(flags).encode())
    if "-march=native" in flags:
        h.update(platform.machine().encode())
        h.update(_cpu_flags().encode())
    return h.hexdigest()[:16]


def build_folder() -> Path:
    """Where this machine's build of these sources lives (or will)."""
    return cache_root() / "kernels" / f"experts-{build_key()}"


def shipped_library() -> Path | None:
    """The library shipped beside the source, when this CPU runs it and it was built from
    these sources (a leftover of older ones must not shadow a change); else None."""
    shipped = SOURCE.with_name(SHIPPED)
    if not shipped.is_file() or not all(f in _cpu_flags().split() for f in SHIP_NEEDS):
        return None
    try:
        data = shipped.read_bytes()
    except OSError:
        return None
    return shipped if _key_mark(build_key(SHIP_FLAGS)) in data else None


def verified(folder: Path, key: str) -> Path | None:
    """``folder``'s library when its bytes are whole (its recorded sha256) and built from
    ``key``; None for a missing, damaged, truncated or stale one."""
    try:
        digest, name = (folder / DIGEST).read_text(encoding="ascii").split()
        library = folder / name
        if library.parent != folder or not name.endswith(".so"):
            return None
        data = library.read_bytes()
    except (OSError, ValueError):
        return None
    if hashlib.sha256(data).hexdigest() != digest or _key_mark(key) not in data:
        return None
    return library


def _key_mark(key: str) -> bytes:
    return f"HEARTH-KEY:{key};".encode()


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    return platform.processor()


def _open() -> tuple[Path, ctypes.CDLL]:
    """The shipped library, else this machine's cached build, else a new build: each checked
    before it is loaded, and a cached one that does not load is built again, once."""
    shipped = shipped_library()
    if shipped is not None:
        try:
            return shipped, _load(shipped)
        except (OSError, AttributeError) as exc:
            _log.warning("the shipped kernel %s does not load (%s): compiling it", shipped, exc)
    folder, key = build_folder(), build_key()
    found = verified(folder, key)
    if found is not None:
        try:
            return found, _loaded(folder, found)
        except (OSError, AttributeError) as exc:  # whole bytes that still do not load
            _log.warning("the cached kernel %s does not load (%s): building it again", found, exc)
            discard_folder(folder)
    elif folder.exists():
        _log.warning("the cached kernel in %s is damaged or stale: building it again", folder)
    path = build(folder, key)
    return path, _loaded(folder, path)


def _loaded(folder: Path, path: Path) -> ctypes.CDLL:
    lib = _load(path)
    with contextlib.suppress(OSError):
        os.utime(folder)  # recently used: the cleanup keeps it beside the current build
    clean_builds(folder)
    return lib


def build(folder: Path, key: str) -> Path:
    """Compile the library into the build folder ``folder`` (published whole, see
    `engine.cache_folders.publish_folder`); its path. Another process's identical build that
    verifies is kept; a damaged one is replaced."""

    def write(tmp: Path) -> None:
        # A name of its own: a rebuild in this process must not get the failed library back
        # from dlopen, which returns an already loaded object for the same path.
        name = f"experts-{os.urandom(6).hex()}.so"
        compile_to(tmp / name, FLAGS, key)
        digest = hashlib.sha256((tmp / name).read_bytes()).hexdigest()
        (tmp / DIGEST).write_text(f"{digest} {name}\n", encoding="ascii")

    publish_folder(folder, write, keep=lambda f: verified(f, key) is not None)
    path = verified(folder, key)
    if path is None:
        raise RuntimeError(f"the kernel built into {folder} does not verify")
    return path


def clean_builds(current: Path, keep_others: int = 1) -> list[Path]:
    """Delete the builds beside ``current`` but the ``keep_others`` most recently used (an
    older checkout or another process may run one), the flat ``experts-<key>.so`` files
    earlier versions cached, and their compilers' temporary folders left by a crash; return
    what went."""
    others = [p for p in current.parent.glob("experts-*") if p != current]
    builds = sorted((p for p in others if p.is_dir()), key=_mtime, reverse=True)
    cutoff = time.time() - STALE_TMP_S
    crashed = [p for p in current.parent.glob("tmp*") if p.is_dir() and _mtime(p) < cutoff]
    gone = builds[keep_others:] + [p for p in others if not p.is_dir()] + crashed
    for p in gone:
        discard_folder(p)
    return gone


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def compile_to(target: Path, flags: tuple[str, ...], key: str | None = None) -> None:
    """Compile `SOURCE` with ``flags`` into ``target``, atomically (another process may be
    compiling the same), carrying ``key`` (default: the key of ``flags``) as its build key;
    RuntimeError with the compiler's message when it fails."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler (cc or gcc) on this machine")
    define = f'-DHEARTH_BUILD_KEY="{key or build_key(flags)}"'
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        done = subprocess.run(
            [compiler, *flags, define, "-o", str(out), str(SOURCE), "-lm"],
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
    lib = ctypes.CDLL(str(path))
    for name in SYMBOLS:  # AttributeError naming the first missing one, before any is used
        getattr(lib, name)
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.hearth_supports.argtypes = [i64]
    lib.hearth_supports.restype = ctypes.c_int
    lib.hearth_routed_ffn.argtypes = [ptr, i64, ptr, ptr, i64, i64, ptr, ptr, ptr,
                                      ptr, ptr, ptr, ptr, i64, i64, ptr]  # fmt: skip
    lib.hearth_routed_ffn.restype = ctypes.c_int
    lib.hearth_matmul.argtypes = [ptr, i64, ptr, i64, ptr, i64]
    lib.hearth_matmul_float.argtypes = [ptr, i64, ptr, i64, ptr, i64, i64]  # and an IN_* form
    for matmul in (lib.hearth_matmul, lib.hearth_matmul_float):
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
    lib.hearth_pool_delay.argtypes = [ctypes.c_int, ctypes.c_int]  # tests: a late worker
    lib.hearth_pool_delay.restype = None
    lib.hearth_pool_spin.argtypes = [ctypes.c_int]
    lib.hearth_pool_spin.restype = None
    lib.hearth_pool_spin_us.argtypes = []
    lib.hearth_pool_spin_us.restype = ctypes.c_int
    lib.hearth_pool_wait.argtypes = [ctypes.c_int]
    lib.hearth_pool_wait.restype = None
    _set_grids(lib)
    return lib
