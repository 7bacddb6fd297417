"""Test helper: the fast-path runner for a model file, or None where the fast path declines.

The engine asks `engine.runners.fast_open.fast_runner_or_reason` (it keeps the reason for the UI);
tests mostly want the runner alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.cache import ProgressFn
from engine.runners.fast_open import fast_runner_or_reason
from engine.runners.onnx_runner import OnnxRunner


def build_fast_runner(
    model: Path | str | Any,
    progress: ProgressFn | None = None,
    threads: int | None = None,
    accuracy: int = ACCURACY_INT8,
    window: int | None = None,
) -> OnnxRunner | None:
    """An `OnnxRunner` for ``model`` (a path or a LoadedModel), converting on first use."""
    runner, _reason = fast_runner_or_reason(model, progress, threads, accuracy, window)
    return runner
