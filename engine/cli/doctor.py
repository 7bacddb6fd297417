"""`python -m engine doctor [--json]`: check this install and say how to fix what is wrong.

Owns the checks and their report: the CPU's vector features (the fast path's kernel wants
AVX2), a C compiler for that kernel (or the one shipped with a packaged app), Qt's system
libraries (the GUI's, checked in a child process: the engine never imports Qt), a keyring
backend for API keys, free disk where models and caches go, the cache folder's health, and
every model file that fails to open, and for each that opens, which kernel runs its matrices
(`engine.fastpath.plan.KernelPlan`). Each check is "ok", "warn" (Hearth runs, slower or with
less) or "fail" (something will not work), with its fix in one line. Exit status 1 when any
check fails, else 0. Reads only; changes nothing. Does not own the things it checks.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes.util
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine import settings
from engine.cache_folders import cache_root, source_of
from engine.cpus import usable_cores
from engine.fastpath.plan import KernelPlan
from engine.hub.library import list_models, models_dir
from engine.kernels import build

GB = 1024**3


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # "ok", "warn" or "fail"
    detail: str
    fix: str = ""


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("doctor", help="Check this install", description=__doc__)
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")
    p.add_argument("--no-models", action="store_true", help="skip opening every model's header")


def run(args: argparse.Namespace) -> int:
    checks: list[Callable[[], Check]] = [cpu, compiler, qt_libraries, keyring_backend, disk, cache]
    results = [_safely(check) for check in checks]
    if not args.no_models:
        results += models()
    if args.json:
        failed = any(r.status == "fail" for r in results)
        print(json.dumps({"ok": not failed, "checks": [asdict(r) for r in results]}, indent=2))
    else:
        for r in results:
            print(f"{r.status.upper():<5} {r.name}: {r.detail}")
            if r.fix:
                print(f"      fix: {r.fix}")
    return 1 if any(r.status == "fail" for r in results) else 0


def _safely(check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:  # a check that breaks is itself a finding, never a traceback
        name = check.__name__.replace("_", " ")
        return Check(name, "fail", f"the check itself failed: {exc}", "report this as a bug")


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu() -> Check:
    machine, cores = platform.machine(), usable_cores()
    flags = cpu_flags()
    if not flags:
        return Check("CPU", "ok", f"{machine}, {cores} cores (features not readable here)")
    wanted = ["avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx_vnni"]
    have = [f.upper() for f in wanted if f in flags]
    detail = f"{machine}, {cores} cores, {' '.join(have) or 'no AVX2'}"
    if machine in ("x86_64", "AMD64") and "avx2" not in flags:
        return Check(
            "CPU",
            "warn",
            detail,
            "no AVX2: the fast path's kernel is off and models run on ONNX Runtime's own "
            "kernels (slower); a CPU from 2015 or later has AVX2",
        )
    return Check("CPU", "ok", detail)


def compiler() -> Check:
    shipped = build.shipped_library()  # this CPU runs it, and it was built from these sources
    if shipped is not None:
        return Check("kernel compiler", "ok", f"not needed: the shipped kernel {shipped.name}")
    if settings.EXPERT_KERNEL.is_off():
        return Check(
            "kernel compiler",
            "warn",
            "the kernel is off (HEARTH_EXPERT_KERNEL=0)",
            "unset HEARTH_EXPERT_KERNEL to use it",
        )
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    fix = (
        "install a C compiler (Debian/Ubuntu: sudo apt install gcc; Fedora: sudo "
        "dnf install gcc; macOS: xcode-select --install), or set CC; until then models run "
        "on ONNX Runtime's kernels (slower)"
    )
    if cc is None:
        return Check("kernel compiler", "fail", "no C compiler (cc or gcc) on PATH", fix)
    problem = _try_compile(cc)
    if problem:
        return Check("kernel compiler", "fail", f"{cc} cannot build the kernel: {problem}", fix)
    return Check("kernel compiler", "ok", f"{cc} builds threaded code for this CPU")


def _try_compile(cc: str) -> str:
    """ "" when ``cc`` compiles a tiny threaded library with the kernel's flags (its pool is
    pthreads: `engine/kernels/pool.h`), else why not."""
    source = (
        "#include <pthread.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "int hearth_probe(void) { return pthread_mutex_lock(&m) || pthread_mutex_unlock(&m); }\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        c_file = Path(tmp) / "probe.c"
        c_file.write_text(source)
        command = [
            cc,
            "-O1",
            "-march=native",
            "-pthread",
            "-shared",
            "-fPIC",
            "-o",
            str(Path(tmp) / "probe.so"),
            str(c_file),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return str(exc)
        lines = done.stderr.strip().splitlines()
        return "" if done.returncode == 0 else (lines[-1] if lines else "it failed")


QT_LIBRARIES = {  # what the xcb platform plugin loads on Linux, and the Debian package for it
    "xcb-cursor": "libxcb-cursor0",
    "xkbcommon-x11": "libxkbcommon-x11-0",
    "EGL": "libegl1",
    "GL": "libgl1",
    "fontconfig": "libfontconfig1",
    "dbus-1": "libdbus-1-3",
}


def qt_libraries() -> Check:
    if importlib.util.find_spec("PySide6") is None:
        return Check(
            "Qt",
            "fail",
            "PySide6 is not installed (the app cannot start)",
            "pip install -c constraints.txt -e .",
        )
    missing = []
    if sys.platform.startswith("linux"):
        missing = [
            pkg for lib, pkg in QT_LIBRARIES.items() if ctypes.util.find_library(lib) is None
        ]
    probe = "import PySide6.QtWidgets, PySide6.QtGui; print(PySide6.__version__)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or ["import failed"])[-1]
        return Check("Qt", "fail", f"PySide6 does not load: {error}", _apt(missing))
    version = done.stdout.strip()
    if missing:
        return Check(
            "Qt",
            "fail",
            f"PySide6 {version}; missing system libraries: "
            f"{', '.join(missing)} (the window will not open)",
            _apt(missing),
        )
    return Check("Qt", "ok", f"PySide6 {version} and its system libraries")


def _apt(packages: list[str]) -> str:
    names = " ".join(packages) or " ".join(QT_LIBRARIES.values())
    return f"Debian/Ubuntu: sudo apt install {names} (Fedora: the same libraries via dnf)"


def keyring_backend() -> Check:
    import keyring
    from keyring.backends import chainer, fail, null

    backend = keyring.get_keyring()
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    empty_chain = isinstance(backend, chainer.ChainerBackend) and not backend.backends
    if isinstance(backend, (fail.Keyring, null.Keyring)) or empty_chain:
        return Check(
            "keyring",
            "warn",
            f"no usable keyring ({name}): API keys can be kept for a session only",
            "Linux: run a Secret Service (gnome-keyring or KWallet) in your desktop session",
        )
    return Check("keyring", "ok", name)


def disk() -> Check:
    worst: tuple[float, Path] | None = None
    for folder in (models_dir(), cache_root()):
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        free = shutil.disk_usage(existing).free / GB
        if worst is None or free < worst[0]:
            worst = (free, folder)
    assert worst is not None
    free, folder = worst
    detail = f"{free:.1f} GB free for {folder}"
    if free < 1:
        fix = "a download or a fast-path conversion needs a few GB: free some space"
        return Check("disk", "fail", detail, fix)
    if free < 5:
        return Check("disk", "warn", detail, "a 7B model needs ~5 GB; free some space first")
    return Check("disk", "ok", detail)


def cache() -> Check:
    root = cache_root()
    if not root.exists():
        return Check("cache", "ok", f"{root} (not created yet)")
    if not os.access(root, os.W_OK):
        return Check(
            "cache",
            "fail",
            f"{root} is not writable",
            "fix its owner or permissions, or set HEARTH_CACHE_DIR",
        )
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / GB
    orphans = [d for d in root.glob("*/*") if d.is_dir() and _orphaned(d, source_of(d))]
    # A temporary folder left over an hour: a conversion that was cut off (a younger one may be
    # another process's conversion running now).
    hour_ago = time.time() - 3600
    leftovers = [p for p in root.rglob("tmp*") if p.is_dir() and p.stat().st_mtime < hour_ago]
    detail = f"{root}, {size:.2f} GB"
    if orphans or leftovers:
        stale = [*orphans, *leftovers]
        names = ", ".join(str(p.relative_to(root)) for p in stale[:3])
        fix = "delete them (their model files are gone, or a conversion was cut off)"
        return Check("cache", "warn", f"{detail}; {len(stale)} stale folder(s): {names}", fix)
    return Check("cache", "ok", detail)


def _orphaned(folder: Path, source: str | None) -> bool:
    return source is not None and not Path(source).exists()


def models() -> list[Check]:
    found = list_models()
    bad = [m for m in found if m.unreadable]
    out = [
        Check(
            "model",
            "fail",
            f"{m.path} does not open: {m.unreadable}",
            "delete it and download it again (the file is damaged or not a GGUF)",
        )
        for m in bad
    ]
    out.insert(
        0,
        Check(
            "models",
            "ok" if not bad else "fail",
            f"{len(found) - len(bad)} open, {len(bad)} fail to open",
        ),
    )
    for m in found:  # which kernel runs each model's matrices, as the fast path will plan it
        if not m.unreadable and str(m.path).endswith(".gguf"):
            with contextlib.suppress(Exception):  # a file the plan cannot read: said above
                out.append(Check("kernel plan", "ok", f"{Path(m.path).name}: {_plan(m.path)}"))
    return out


def _plan(path: str | Path) -> str:
    return KernelPlan.for_file(Path(path)).describe()
