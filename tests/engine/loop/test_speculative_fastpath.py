"""Speculative decoding on the bundled SmolLM2's ONNX fast path (int8 activations).

What holds there, and what does not:
- A 1-token forward rounds apart from the same token inside a run of >= 2 tokens (ORT's
  attention takes MLAS's M == 1 kernel, ~5e-5 apart in float, which int8 activation rounding
  grows to ~1 logit: `tests/engine/loop/test_determinism.py::test_a_one_token_run_rounds_apart`).
  A verified draft is a multi-token run, so a speculative reply may leave the plain one where
  two tokens were close (measured: after 12-93 tokens on chat, rewrite and code prompts).
- Everything else is exact: with every forward made a run of >= 2 tokens (each 1-token step
  runs [previous, token], as test_determinism's rule does), speculative and plain greedy give
  bitwise the same token ids, so the verifier's rows, crops and cache are right on this path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from engine.engine import Engine
from engine.types import Finished, GenerationRequest, Message, SamplingParams

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=128)
REWRITE = (  # copy-heavy: drafts hold for long stretches, and some are rejected
    "Rewrite the following paragraph in clear, formal English. Keep every fact and name.\n\n"
    "The lighthouse keeper, Mara Quill, climbs the ninety-two steps of the Kestrel Point light "
    "every evening at six. She trims the wick, polishes the lens and writes the weather in her "
    "logbook: wind from the west, a heavy swell, rain after midnight."
)
CODE = (
    "Here is a Python function:\n\ndef total(items):\n    result = 0\n    for item in items:\n"
    "        result = result + item.price * item.quantity\n    return result\n\n"
    "Rewrite it to skip items whose quantity is zero and add type hints."
)


@pytest.fixture(scope="module")
def fast_bundled() -> Iterator[Engine]:
    engine = Engine("bundled")  # a .gguf on the CPU: the ONNX fast path
    assert engine.info.backend == "onnx"
    yield engine
    engine.close()


@contextmanager
def runs_of_two_or_more(runner: Any) -> Iterator[None]:
    """Every 1-token extend after the first token runs [previous, token] (same cache after)."""
    plain = runner.extend

    def extend(ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        if len(ids) == 1 and runner.cached_ids:
            previous = runner.cached_ids[-1]
            runner.crop(len(runner.cached_ids) - 1)
            return np.asarray(plain([previous, ids[0]], last_only=last_only)[-1:])
        return np.asarray(plain(ids, last_only=last_only))

    runner.extend = extend
    try:
        yield
    finally:
        del runner.extend  # the class's method again


def greedy_ids(engine: Engine, prompt: str, speculative: bool) -> tuple[Finished, list[int]]:
    """One cold greedy reply, and the sizes of the forwards it made after the prefill."""
    runner: Any = engine.runner
    engine.speculative = speculative
    runner.reset()
    calls: list[int] = []
    runner.extend_calls = calls  # opt in to counting forwards
    try:
        request = GenerationRequest((Message("user", prompt),), GREEDY, f"spec-{speculative}")
        done = list(engine.generate(request))[-1]
    finally:
        engine.speculative = False
        runner.extend_calls = None
    assert isinstance(done, Finished)
    return done, calls[1:]


@pytest.mark.parametrize("prompt", [REWRITE, CODE], ids=["rewrite", "code"])
def test_speculation_is_exact_when_every_forward_is_a_multi_token_run(
    fast_bundled: Engine, prompt: str
) -> None:
    with runs_of_two_or_more(fast_bundled.runner):
        plain, _ = greedy_ids(fast_bundled, prompt, speculative=False)
        spec, forwards = greedy_ids(fast_bundled, prompt, speculative=True)
    assert len(plain.token_ids) > 48  # a long reply, not an early stop
    assert spec.token_ids == plain.token_ids and spec.text == plain.text
    assert sum(1 for n in forwards if n > 2) > 0  # drafts were verified (a pair is a plain step)
    assert len(forwards) < len(spec.token_ids) - 8  # and some held: fewer forwards than tokens


def test_the_pairing_wrapper_changes_only_the_rounding(fast_bundled: Engine) -> None:
    """The rule above is a fair stand-in: a paired step's logits equal the same tokens run in
    one prefill bitwise, and its cache holds the same ids as a plain step's."""
    runner: Any = fast_bundled.runner
    ids = fast_bundled.tokenize("Name three colours, then three animals, then three trees.")
    runner.reset()
    whole = runner.extend(ids, last_only=True)[-1]
    runner.reset()
    runner.extend(ids[:-1], last_only=True)
    with runs_of_two_or_more(runner):
        paired = runner.extend(ids[-1:], last_only=True)[-1]
    assert bool((paired == whole).all())
    assert list(runner.cached_ids) == list(ids)
    assert "extend" not in vars(runner)  # the wrapper is gone
    runner.reset()
