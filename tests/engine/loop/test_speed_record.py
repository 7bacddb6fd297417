"""A finished reply on the fast path records this machine's decode speed per byte of weights,
which the Models window turns into expected tok/s for other files; the torch path does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.synth.core import write_tiny_model
from engine.engine import Engine
from engine.hub.fit import expected_tok_s
from engine.hub.summary import decode_bytes_of_file
from engine.types import Finished, GenerationRequest, Message, SamplingParams


def _tiny(folder: Path) -> Path:
    path = folder / "tiny.gguf"
    write_tiny_model(path, "llama", "Q8_0")  # random weights, the bundled tokenizer
    return path


def _reply(engine: Engine, tokens: int) -> Finished:
    params = SamplingParams(temperature=0.0, max_new_tokens=tokens)
    request = GenerationRequest(messages=(Message("user", "hello"),), params=params)
    finished = [e for e in engine.generate(request) if isinstance(e, Finished)]
    return finished[-1]


@pytest.mark.parametrize("backend, recorded", [("onnx", True), ("torch", False)])
def test_a_fast_path_reply_records_the_decode_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, recorded: bool
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    model = _tiny(tmp_path)
    engine = Engine(str(model), backend=backend)
    try:
        done = _reply(engine, 24)
        assert done.stats.completion_tokens >= 16  # long enough to count
        # Per byte one token reads (the header's weights, not the whole file).
        speed, source = expected_tok_s(decode_bytes_of_file(model))
        assert (source == "speed measured on this machine") is recorded
        if recorded:
            assert speed == pytest.approx(done.stats.decode_tokens_per_s, rel=1e-6)
    finally:
        engine.close()


def test_a_short_reply_is_not_a_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    model = _tiny(tmp_path)
    engine = Engine(str(model), backend="onnx")
    try:
        _reply(engine, 4)
        assert expected_tok_s(model.stat().st_size)[1] != "speed measured on this machine"
    finally:
        engine.close()
