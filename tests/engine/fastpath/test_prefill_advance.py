"""A prefill's runs before its last skip the output head (`OnnxRunner.advance`): the head's
rows start past the run's end, so it runs on none; the cache must be exactly what `extend`
leaves, so the last run's logits equal a prompt run with logits all the way, bit for bit.

On tiny random files: a llama (Q4_K_M) with its head on the kernel op (``HearthMatMul`` on no
rows) and on ONNX Runtime's MatMulNBits, and a gemma4 (soft-capped head, per-layer
embeddings, a sliding window the prompt outgrows) with every matrix on the kernel op. The
generate loop advances every run but the last (`engine.generate._prefill`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from bench.synth.gemma4 import write_tiny_gemma4
from engine.fastpath.plan import kernel_enabled
from engine.generate import _prefill
from tests.engine.support.fast_runner import build_fast_runner

pytestmark = pytest.mark.skipif(not kernel_enabled(), reason="the expert kernel is not built here")

IDS = [(11 * i + 5) % 250 + 3 for i in range(300)]  # past the tiny gemma4's sliding window


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "1")  # tiny files: force the kernel path on
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")  # every matrix on the kernel op
    for name in ("HEARTH_EXPERT_KERNEL", "HEARTH_DENSE_KERNEL_MIN_BYTES"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def _runner(path: Path, kernel: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "1" if kernel else "0")
    runner = build_fast_runner(path, window=512)
    assert runner is not None
    assert (runner._matrices is not None) == kernel
    return runner


def _check(runner: Any) -> None:
    runner.reset()
    whole = [runner.extend(IDS[a:b], last_only=True) for a, b in [(0, 128), (128, 256)]]
    whole.append(runner.extend(IDS[256:], last_only=True))
    runner.reset()
    assert runner.advance(IDS[:128]) is None and runner.advance(IDS[128:256]) is None
    assert runner.cached_ids == IDS[:256]
    last = runner.extend(IDS[256:], last_only=True)
    assert last.shape == (1, runner.vocab_size)
    np.testing.assert_array_equal(last, whole[-1])


@pytest.mark.parametrize("kernel", [True, False], ids=["head-on-kernel", "head-on-matmulnbits"])
def test_advanced_runs_leave_the_cache_extend_leaves(
    cache_dir: Path, tmp_path: Path, kernel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "llama-Q4_K_M.gguf"
    write_tiny_model(path, "llama", "Q4_K_M")
    _check(_runner(path, kernel, monkeypatch))


def test_gemma4_every_matrix_on_the_kernel(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "gemma4-Q4_K_M.gguf"
    write_tiny_gemma4(path, "Q4_K_M")
    _check(_runner(path, True, monkeypatch))


def test_the_prefill_loop_advances_all_runs_but_the_last(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    path = tmp_path / "llama-Q4_K_M.gguf"
    write_tiny_model(path, "llama", "Q4_K_M")
    runner = _runner(path, True, monkeypatch)
    runner.reset()
    want = runner.extend(IDS, last_only=True)[-1]
    calls: list[tuple[str, int]] = []
    advance, extend = runner.advance, runner.extend
    monkeypatch.setattr(runner, "advance", lambda ids: calls.append(("advance", len(ids))) or
                        advance(ids))  # fmt: skip
    monkeypatch.setattr(runner, "extend", lambda ids, last_only=False: calls.append(
        ("extend", len(ids))) or extend(ids, last_only))  # fmt: skip
    runner.reset()
    runner.prefill_chunk = 128
    got = _prefill(runner, IDS, threading.Event())
    assert calls == [("advance", 128), ("advance", 128), ("extend", 44)]
    assert got is not None
    np.testing.assert_array_equal(got, want)
