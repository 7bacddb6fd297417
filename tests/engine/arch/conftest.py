"""Fixtures the architecture tests share: a per-test model cache folder.

Owns ``cache_dir``: HEARTH_CACHE_DIR pointed at a fresh folder under the test's tmp_path (the
converted graphs of the tiny files each test writes stay apart), the tmp_path returned so a
test writes its GGUF beside it. Does not own the tiny model writers (`bench.synth`) or the
runner builders (`tests.engine.support.fast_runner`).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path
