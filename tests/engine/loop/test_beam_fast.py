"""Beam search on the fast path (`engine.beam_fast`) against transformers' own beam search.

A tiny random llama GGUF runs on the fast path with float activations (``accuracy=0``: its
logits equal the float32 transformers twin's within ~1e-5), so the two beam searches see the
same scores and must return the same ids: finished on the last allowed token, ended early on
an EOS id, and with the repetition penalty. The engine-level test checks that a beam request
on a fast-path engine never loads the torch model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from engine.beam_fast import BeamSettings, fast_beam_ids
from engine.runners.batched import BatchedDecoder
from tests.engine.support.fast_runner import build_fast_runner

PROMPT = [1, 504, 3287, 314, 253, 1345, 30, 198, 2]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, Path]]:
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("beam") / "tiny.gguf"
    model = write_tiny_model(path, "llama", "Q8_0")
    runner = build_fast_runner(path, accuracy=0, threads=1)
    assert runner is not None
    yield model, runner, path


def _reference(model: Any, settings: BeamSettings) -> list[int]:
    ids = torch.tensor([PROMPT])
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
            num_beams=settings.num_beams, max_new_tokens=settings.max_new,
            eos_token_id=sorted(settings.eos_ids), pad_token_id=min(settings.eos_ids),
            repetition_penalty=settings.repetition_penalty,
        )  # fmt: skip
    generated = out[0, len(PROMPT) :].tolist()
    # transformers pads a beam that ended early; ours stops at its EOS id
    for i, token in enumerate(generated):
        if token in settings.eos_ids:
            return [int(t) for t in generated[: i + 1]]
    return [int(t) for t in generated]


def _ours(runner: Any, settings: BeamSettings) -> list[int]:
    decoder = BatchedDecoder(runner, slots=settings.num_beams)
    return fast_beam_ids(decoder, PROMPT, settings, threading.Event())


@pytest.mark.parametrize("beams,penalty", [(3, 1.0), (4, 1.3)])
def test_same_ids_as_transformers_to_the_last_token(twins: Any, beams: int, penalty: float) -> None:
    model, runner, _ = twins
    settings = BeamSettings(beams, 12, frozenset({2}), penalty)
    expected = _reference(model, settings)
    assert len(expected) == 12  # the random model never picks id 2 here: every beam runs out
    assert _ours(runner, settings) == expected


def test_same_ids_when_beams_end_on_eos(twins: Any) -> None:
    model, runner, _ = twins
    full = _reference(model, BeamSettings(3, 10, frozenset({2})))
    # Make a token the unconstrained best beam uses into the EOS id: hypotheses finish early
    # and the length-normalised comparison with the running beams decides the reply.
    with torch.inference_mode():
        first = model(torch.tensor([PROMPT])).logits[0, -1]
    likely = [int(i) for i in torch.topk(first, 4).indices]  # the first step's best tokens
    ended_early = 0
    for eos in [{full[1]}, {full[3]}, {full[5]}, set(likely[:2]), set(likely)]:
        settings = BeamSettings(3, 10, frozenset(eos), 1.0)
        expected = _reference(model, settings)
        ended_early += len(expected) < 10 and expected[-1] in settings.eos_ids
        assert _ours(runner, settings) == expected, eos
    assert ended_early  # the EOS path really ran


def test_cancel_ends_after_the_first_step(twins: Any) -> None:
    _, runner, _ = twins
    cancel = threading.Event()
    cancel.set()
    decoder = BatchedDecoder(runner, slots=2)
    assert len(fast_beam_ids(decoder, PROMPT, BeamSettings(2, 50, frozenset({2})), cancel)) == 1


def test_reorder_copies_caches_into_their_new_slots(twins: Any) -> None:
    _, runner, _ = twins
    decoder = BatchedDecoder(runner, slots=3)
    first = decoder.prefill(0, PROMPT)
    decoder.reorder([0, 0, 0])
    rows = decoder.decode([5, 6, 7])
    decoder.reorder([2, 0])  # slot 0 <- old slot 2, slot 1 <- old slot 0
    assert decoder.cached_ids(0) == [*PROMPT, 7] and decoder.cached_ids(1) == [*PROMPT, 5]
    again = decoder.decode([9, 9])
    runner.reset()
    assert np.allclose(runner.extend(PROMPT, last_only=True)[-1], first, atol=1e-5)
    for slot, token in enumerate([7, 5]):
        runner.reset()
        runner.extend([*PROMPT, token])
        assert np.allclose(runner.extend([9])[-1], again[slot], atol=1e-4)
    assert not np.allclose(rows[0], rows[2], atol=1e-4)  # the rows really differ
    runner.reset()


def test_engine_beam_request_never_loads_torch_weights(twins: Any) -> None:
    from engine.engine import Engine
    from engine.types import Finished, GenerationRequest, Message, SamplingParams

    _, _, path = twins
    engine = Engine(str(path), context_window=256)
    try:
        assert engine.info.backend == "onnx"
        params = SamplingParams(num_beams=3, max_new_tokens=8)
        request = GenerationRequest((Message("user", "Name three colours."),), params)
        done = list(engine.generate(request))[-1]
        assert isinstance(done, Finished) and done.stats.completion_tokens > 0
        assert not engine.loaded.model_loaded
    finally:
        engine.close()
