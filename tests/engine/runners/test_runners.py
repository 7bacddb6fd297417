"""What every Runner shares: its backend name, one overflow error, opt-in forward counting.

Each case builds a real runner over a real model: the tiny random Llama (torch, and the static
cache runner run eagerly on CPU) and a tiny random GGUF converted for ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ContextOverflowError
from engine.runners.base import Runner

WINDOW = 32


def _torch(tiny_model_dir: Path, _tmp: Path) -> Any:
    from engine.runners.torch_runner import TorchRunner

    return TorchRunner(_model(tiny_model_dir), context_window=WINDOW)


def _static(tiny_model_dir: Path, _tmp: Path) -> Any:
    from engine.runners.cuda_runner import StaticCacheRunner

    return StaticCacheRunner(_model(tiny_model_dir), context_window=WINDOW, compile_decode=False)


def _onnx(_dir: Path, tmp: Path) -> Any:
    from tests.engine.support.fast_runner import build_fast_runner
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    return build_fast_runner(write_tiny_gguf(tmp / "tiny.gguf"), window=WINDOW)


def _model(folder: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder).eval()


MAKERS: dict[str, Callable[[Path, Path], Any]] = {
    "torch": _torch,
    "cuda": _static,
    "onnx": _onnx,
}


@pytest.fixture(params=sorted(MAKERS))
def runner(
    request: pytest.FixtureRequest,
    tiny_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, Any]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    made = MAKERS[request.param](tiny_model_dir, tmp_path)
    assert made is not None, f"the {request.param} runner could not be built"
    return request.param, made


def test_each_runner_names_its_backend(runner: tuple[str, Any]) -> None:
    name, made = runner
    assert isinstance(made, Runner)
    assert made.backend == name


def test_overflow_is_one_error_and_leaves_the_cache_alone(runner: tuple[str, Any]) -> None:
    _name, made = runner
    made.extend(list(range(1, WINDOW - 1)))
    with pytest.raises(ContextOverflowError, match=f"context window of {WINDOW}"):
        made.extend([5, 6, 7])
    assert made.cached_ids == list(range(1, WINDOW - 1))
    made.extend([5, 6])  # exactly full is allowed
    assert len(made.cached_ids) == WINDOW


def test_counting_forwards_is_opt_in(runner: tuple[str, Any]) -> None:
    _name, made = runner
    made.extend([1, 2, 3])
    assert made.extend_calls is None  # nothing grows in a long-running session
    made.extend_calls = []
    made.extend([4, 5])
    made.extend([6], last_only=True)
    assert made.extend_calls == [2, 1]
