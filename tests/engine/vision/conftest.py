"""Tiny synthetic mmprojs (bench.synth.mmproj, seed 0), written once per test session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench.vision_reference import mmproj_file


@pytest.fixture(scope="session")
def tiny_mmproj(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """``tiny_mmproj("gemma3", "F16")``: the path of that tiny projector file."""
    folder = tmp_path_factory.mktemp("mmproj")
    return lambda key, matrix_type="F16": mmproj_file(folder, key, matrix_type)
