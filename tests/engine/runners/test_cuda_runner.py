"""The static-cache Runner (the GPU path): same logits as the DynamicCache TorchRunner.

Runs eagerly on CPU everywhere; the compiled CUDA-graph decode step is checked only where a
CUDA device exists (marked gpu).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from engine.runners.cuda_runner import StaticCacheRunner
from engine.runners.torch_runner import TorchRunner

IDS = [(11 * i + 3) % 300 for i in range(40)]


def _model(tiny_model_dir: Path, device: str, dtype: torch.dtype) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=dtype).to(device).eval()


def _check_against_dynamic(runner: Any, reference: Any, atol: float) -> None:
    full = torch.as_tensor(reference.extend(IDS)).cpu()  # numpy, or a device tensor
    got = torch.as_tensor(runner.extend(IDS))
    torch.testing.assert_close(got.cpu(), full, atol=atol, rtol=0)
    runner.crop(20)
    part = torch.as_tensor(runner.extend(IDS[20:30], last_only=True))
    torch.testing.assert_close(part[0].cpu(), full[29], atol=atol, rtol=0)
    for i in range(30, 40):  # single-token steps over stale rows left by the crop
        step = torch.as_tensor(runner.extend([IDS[i]]))
    torch.testing.assert_close(step[0].cpu(), full[-1], atol=atol, rtol=0)
    assert runner.cached_ids == IDS
    runner.reset()
    assert runner.cached_ids == []


def test_static_cache_matches_dynamic_cache_on_cpu(tiny_model_dir: Path) -> None:
    model = _model(tiny_model_dir, "cpu", torch.float32)
    runner = StaticCacheRunner(model, context_window=128, compile_decode=False)
    _check_against_dynamic(runner, TorchRunner(model, context_window=128), atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_compiled_decode_step_matches_on_cuda(tiny_model_dir: Path) -> None:
    model = _model(tiny_model_dir, "cuda", torch.bfloat16)
    runner = StaticCacheRunner(model, context_window=128, compile_decode=True)
    _check_against_dynamic(runner, TorchRunner(model, context_window=128), atol=5e-2)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_engine_auto_uses_the_static_cache_runner_on_cuda(tiny_model_dir: Path) -> None:
    """backend="auto" on a CUDA machine runs the GPU runner, not the CPU paths."""
    from engine.engine import Engine

    engine = Engine(str(tiny_model_dir))
    assert engine.info.backend == "cuda" and engine.info.device.startswith("cuda")
    assert engine.info.slow_path_reason == ""
