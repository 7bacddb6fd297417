"""Where Hearth's kernel runs (`engine.kernels.platforms`), each branch forced by its facts.

The decision is fed each platform the issue names: x86-64 with AVX2 (and AVX-512), an x86 CPU
without AVX2, ARM (Linux aarch64, Apple Silicon arm64, Windows ARM64), macOS with Apple's clang
or GCC (no OpenMP needed: the kernel's own pool), no compiler at all, a packaged library that
needs none. Then the refusal travels: with ARM's facts injected, the build refuses with the
reason, the native ops do not serve, a large file's matrices stay on ONNX Runtime's MatMulNBits
(the fast path's explicit choice), and the engine's `ModelInfo` carries the reason the status
bar shows; on this machine's own facts the kernel builds and the note is empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.kernels import build, native, platforms
from engine.kernels.platforms import PlatformFacts, kernel_refusal

X86_FLAGS = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw"})


def _facts(**changes: object) -> PlatformFacts:
    base = {"machine": "x86_64", "system": "Linux", "cpu_flags": X86_FLAGS,
            "compiler": "/usr/bin/cc", "shipped": False}  # fmt: skip
    base.update(changes)
    return PlatformFacts(**base)  # type: ignore[arg-type]


def test_x86_with_avx2_builds_the_kernel() -> None:
    assert kernel_refusal(_facts()) is None
    assert kernel_refusal(_facts(cpu_flags=X86_FLAGS - {"avx512f", "avx512bw"})) is None
    assert kernel_refusal(_facts(machine="AMD64", system="Windows", cpu_flags=None)) is None


def test_an_x86_cpu_without_avx2_runs_onnx_runtimes_kernels() -> None:
    reason = kernel_refusal(_facts(cpu_flags=frozenset({"sse4_2", "avx"})))
    assert reason is not None and "AVX2 and FMA" in reason and "ONNX Runtime" in reason


@pytest.mark.parametrize(
    ("machine", "system"), [("aarch64", "Linux"), ("arm64", "Darwin"), ("ARM64", "Windows")]
)
def test_arm_runs_onnx_runtimes_kernels(machine: str, system: str) -> None:
    reason = kernel_refusal(_facts(machine=machine, system=system, cpu_flags=None))
    assert reason is not None and machine in reason and "x86" in reason


def test_an_intel_mac_builds_with_apples_clang_or_gcc() -> None:
    """The kernel threads with its own pthreads pool, so a compiler without OpenMP serves."""
    apple = _facts(system="Darwin", compiler="/usr/bin/cc", cpu_flags=None)
    assert kernel_refusal(apple) is None
    gcc = _facts(system="Darwin", compiler="/opt/homebrew/bin/gcc-14", cpu_flags=None)
    assert kernel_refusal(gcc) is None


def test_no_compiler_runs_onnx_runtimes_kernels_unless_a_library_ships() -> None:
    reason = kernel_refusal(_facts(compiler=None))
    assert reason is not None and "no C compiler" in reason
    assert kernel_refusal(_facts(compiler=None, shipped=True)) is None
    assert kernel_refusal(_facts(machine="arm64", shipped=True)) is not None  # x86 code


@pytest.fixture
def fresh_build() -> Iterator[None]:
    """`build.library()` decided again in this test, and again after it."""

    def forget() -> None:
        build.library.cache_clear()
        build._reason.clear()
        build._path.clear()

    forget()
    yield
    forget()


def test_on_arm_the_fast_path_explicitly_takes_onnx_runtimes_kernels(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm = _facts(machine="aarch64", cpu_flags=None)
    monkeypatch.setattr(platforms, "facts", lambda shipped: arm)
    from engine.fastpath import plan

    assert build.library() is None and not build.available()
    reason = build.unavailable_reason()
    assert reason is not None and "aarch64" in reason
    assert not native.serves()
    assert not plan.every_matrix_on(8 << 30)  # an 8 GB file: MatMulNBits, not the kernel


def test_the_engine_reports_why_to_the_status_bar(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.engine import Engine

    arm = _facts(machine="aarch64", cpu_flags=None)
    monkeypatch.setattr(platforms, "facts", lambda shipped: arm)
    engine = Engine("bundled", context_window=256)
    try:
        assert engine.info.backend == "onnx"
        assert "aarch64" in engine.info.kernel_note
    finally:
        engine.close()


def test_this_machine_builds_the_kernel_and_says_nothing(fresh_build: None) -> None:
    here = platforms.facts(build.SOURCE.with_name(build.SHIPPED))
    if kernel_refusal(here) is not None:
        pytest.skip(f"the kernel does not run here: {kernel_refusal(here)}")
    assert build.available() and build.unavailable_reason() is None
    from engine.engine import Engine

    engine = Engine("bundled", context_window=256)
    try:
        assert engine.info.backend == "onnx" and engine.info.kernel_note == ""
    finally:
        engine.close()


def test_facts_are_read_from_this_machine(tmp_path: Path) -> None:
    import platform

    here = platforms.facts(tmp_path / "none.so")
    assert here.machine == platform.machine() and not here.shipped
    if Path("/proc/cpuinfo").exists():
        assert here.cpu_flags
