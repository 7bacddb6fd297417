"""Fixtures shared by the fast-path tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def every_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache folder in which tiny files run every matrix on ``HearthMatMul`` (no
    experts or dense MLPs on the kernel, whatever the environment says); yields tmp_path."""
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "1")  # tiny files: every matrix on the op
    for name in ("HEARTH_DENSE_KERNEL", "HEARTH_EXPERT_KERNEL", "HEARTH_MATRIX_KERNEL"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
