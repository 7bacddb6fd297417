"""`python -m engine perplexity`: the chunked measurement equals a one-shot computation.

Uses the ONNX fast path of a tiny GGUF (a real Runner, converted in the test) and the tiny
random Llama's torch engine for the command line end to end.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.cli.perplexity import perplexity

TEXT = Path(__file__).resolve().parents[2] / "data" / "perplexity.txt"


@pytest.fixture(scope="module")
def tiny_fast(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import os

    from tests.engine.support.fast_runner import build_fast_runner
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    folder = tmp_path_factory.mktemp("ppl")
    old = os.environ.get("HEARTH_CACHE_DIR")
    os.environ["HEARTH_CACHE_DIR"] = str(folder / "cache")
    try:
        return build_fast_runner(write_tiny_gguf(folder / "tiny.gguf"))
    finally:
        if old is None:
            del os.environ["HEARTH_CACHE_DIR"]
        else:
            os.environ["HEARTH_CACHE_DIR"] = old


IDS = [(13 * i + 5) % 256 for i in range(120)]


def _one_shot(runner: Any, ids: list[int]) -> float:
    runner.reset()
    logits = torch.from_numpy(runner.extend(ids)).double()  # Runners hand numpy
    nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    runner.reset()
    return math.exp(float(nll))


def test_chunks_carry_the_cache_and_score_every_token(tiny_fast: Any) -> None:
    expected = _one_shot(tiny_fast, IDS)
    for chunk in (7, 50, 512):
        value, scored = perplexity(tiny_fast, IDS, chunk=chunk)
        assert scored == len(IDS) - 1
        assert value == pytest.approx(expected, rel=2e-3)
    assert tiny_fast.cached_ids == []


def test_window_restarts_skip_one_token_each(tiny_fast: Any) -> None:
    window = tiny_fast.context_window
    tiny_fast.context_window = 40
    try:
        _, scored = perplexity(tiny_fast, IDS, chunk=20)  # windows of 40: restarts at 40, 80
    finally:
        tiny_fast.context_window = window
    assert scored == len(IDS) - 3


def test_cli_prints_json(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engine.__main__ import main

    argv = ["perplexity", "--model", str(tiny_model_dir), "--file", str(TEXT), "--json"]
    assert main([*argv, "--backend", "torch", "--dtype", "float32"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tokens"] > 250 and math.isfinite(result["perplexity"])
    assert result["perplexity"] > 1.0 and result["backend"] == "torch"


def test_cli_rejects_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engine.__main__ import main

    assert main(["perplexity", "--file", str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt" in capsys.readouterr().err
