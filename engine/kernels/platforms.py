"""Where the C kernel runs: the platform facts and the one decision made from them.

Owns `PlatformFacts` (the CPU's architecture and flags, the OS, the C compiler, whether a
packaged library ships beside the source), `facts()` (this machine's) and `kernel_refusal`:
None where the kernel is for this machine (x86-64 with AVX2, AVX-512 used where present),
else the reason in a sentence, which `engine.kernels.build` keeps as its unavailable reason
and the status bar shows (`engine.types.ModelInfo.kernel_note`). Where it refuses, the fast
path runs every matrix on ONNX Runtime's own kernels (MatMulNBits, its MLAS code for ARM
NEON and x86 alike): that is the explicit path, not a fall-through after a failed compile.

Why refuse rather than compile: the kernel's dots are x86 intrinsics behind ``#ifdef
__AVX2__``; on ARM it would compile to plain C loops and still take every matrix of a file
of 64 MB and more, slower than ONNX Runtime's NEON kernels. Without a compiler nothing can be
built. An Intel Mac's clang may build it: the kernel threads with its own pthreads pool
(`pool.h`, condition variables where there are no futexes), not OpenMP, which Apple's clang
lacks (compiled on Linux only so far; a failed compile still leaves ONNX Runtime's kernels).
Does not own compiling or loading (`engine.kernels.build`).
"""

from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

X86 = frozenset({"x86_64", "amd64", "x64"})
NEEDS = ("avx2", "fma")  # what the kernel's fast dots are written with
ORT = "ONNX Runtime's kernels run instead"


@dataclass(frozen=True)
class PlatformFacts:
    """What the decision reads. ``cpu_flags`` None: the OS does not list them (no
    /proc/cpuinfo); ``compiler`` None: no C compiler found."""

    machine: str  # platform.machine(): "x86_64", "AMD64", "arm64", "aarch64"
    system: str  # platform.system(): "Linux", "Darwin", "Windows"
    cpu_flags: frozenset[str] | None
    compiler: str | None
    shipped: bool  # a packaged library lies beside the source (no compiler needed)


def kernel_refusal(facts: PlatformFacts) -> str | None:
    """None where the kernel is built for this platform; else why not, in a sentence."""
    machine = facts.machine.lower()
    if machine not in X86:
        return f"Hearth's kernel is written for x86 CPUs and this one is {facts.machine}; {ORT}"
    missing = [f for f in NEEDS if facts.cpu_flags is not None and f not in facts.cpu_flags]
    if missing:
        lacks = " and ".join(f.upper() for f in missing)
        return f"this CPU lacks {lacks}, which Hearth's kernel needs; {ORT}"
    if facts.shipped:
        return None
    if facts.compiler is None:
        return f"no C compiler (cc or gcc) to build Hearth's kernel with; {ORT}"
    return None


def facts(shipped: Path) -> PlatformFacts:
    """This machine's facts; ``shipped``: where a packaged library would lie."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    return PlatformFacts(
        machine=platform.machine(),
        system=platform.system(),
        cpu_flags=_cpu_flags(),
        compiler=compiler,
        shipped=shipped.exists(),
    )


def _cpu_flags() -> frozenset[str] | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return None
