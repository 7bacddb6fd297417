"""Speculative decoding on the ONNX fast path (int8 activations): greedy and seeded ids are exact.

A verified draft is a multi-token forward; a plain decode step is a 1-token one. ONNX Runtime's
GroupQueryAttention takes MLAS's M == 1 SGEMM kernel for one query row, which rounds apart
(~1e-7, grown to ~1 logit by int8 activation rounding), so speculative replies used to part from
plain ones at near ties (after 12-93 tokens). The graph now runs a 1-token step's attention as
row 0 of a 2-row run (`engine.fastpath.graph._one_row_pad`): every row rounds the same however
many rows a forward has, so speculative and plain greedy give bitwise the same ids, on the
bundled model and on tiny GGUFs (every matrix of both on the C kernel since session 14; the
bundled model's ran on MatMulNBits before). Seeded sampling at the app's default settings too:
the sampler draws one uniform a token from the same rows, so a draft changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.engine import Engine
from engine.types import Finished, GenerationRequest, Message, SamplingParams

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=128)
SAMPLED = SamplingParams(seed=11, max_new_tokens=128)  # the app's "Balanced" (temperature 0.7)
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


def greedy_ids(
    engine: Engine, prompt: str, speculative: bool, params: SamplingParams = GREEDY
) -> tuple[Finished, list[int]]:
    """One cold reply (greedy unless ``params`` say otherwise), and the sizes of the forwards
    it made after the prefill."""
    runner: Any = engine.runner
    engine.speculative = speculative
    runner.reset()
    calls: list[int] = []
    runner.extend_calls = calls  # opt in to counting forwards
    try:
        request = GenerationRequest((Message("user", prompt),), params, f"spec-{speculative}")
        done = list(engine.generate(request))[-1]
    finally:
        engine.speculative = False
        runner.extend_calls = None
    assert isinstance(done, Finished)
    return done, calls[1:]


DOCUMENT = (  # bench speculation's document question: asks for its sentences as they are
    '<document index="1" name="harbour.txt">\nHarbour notes, spring.\n\nThe lighthouse keeper, '
    "Mara Quill, climbs the ninety-two steps of the Kestrel Point light every evening at six. "
    "She trims the wick, polishes the lens and writes the weather in her logbook: wind from the "
    "west, a heavy swell, rain after midnight. On the first of March she found a green bottle on "
    "the shingle below the tower. Inside was a letter from a girl in Bergen who asked whoever "
    "found it to write back and describe the sea where they live. The supply boat comes on "
    "Thursdays when the sea allows; in February it missed three weeks running, and Mara rationed "
    "the lamp oil by lighting the lens an hour later each night.\n</document>\n\nQuote, word "
    "for word, the sentences of the document that describe the bottle and the supply boat."
)


# (prompt, whether the bundled model's reply copies it). The 135M model rewrites the code in
# its own words (since the float16 K/V cache it writes a fresh function; over a float32 cache
# it had looped on one line), and since its matrices run on the C kernel (session 14) it
# answers the document question with a loop of its own sentence about the keeper where
# MatMulNBits' rounding had it quote: there drafts are verified but few hold, so those cases
# check that speculation leaves the reply alone, the rewrite that it also saves forwards.
CASES = [(REWRITE, True), (CODE, False), (DOCUMENT, False)]


@pytest.mark.parametrize(("prompt", "copies"), CASES, ids=["rewrite", "code", "document"])
def test_speculative_greedy_is_bitwise_plain_greedy(
    fast_bundled: Engine, prompt: str, copies: bool
) -> None:
    """Why: the app turns speculation on only if it never changes a greedy reply."""
    plain, _ = greedy_ids(fast_bundled, prompt, speculative=False)
    spec, forwards = greedy_ids(fast_bundled, prompt, speculative=True)
    assert len(plain.token_ids) >= 64  # a long reply, not an early stop
    assert spec.token_ids == plain.token_ids and spec.text == plain.text
    assert sum(1 for n in forwards if n > 1) > 0  # drafts were verified
    if copies:  # and some held: fewer forwards than tokens
        assert len(forwards) < len(spec.token_ids) - 8


def test_speculative_sampling_is_bitwise_plain_sampling(fast_bundled: Engine) -> None:
    """Why: the app speculates at its default temperature too (0.7), so a seeded reply must be
    the same with drafts, and drafts must still hold often enough to save forwards."""
    plain, _ = greedy_ids(fast_bundled, REWRITE, speculative=False, params=SAMPLED)
    spec, forwards = greedy_ids(fast_bundled, REWRITE, speculative=True, params=SAMPLED)
    assert len(plain.token_ids) >= 32
    assert spec.token_ids == plain.token_ids and spec.text == plain.text
    assert len(forwards) < len(spec.token_ids) - 4  # some drafted ids were sampled as drafted


def test_a_one_token_step_rounds_as_a_row_of_a_longer_run(fast_bundled: Engine) -> None:
    """The cause, checked directly: a 1-token step's logits equal the same token's row in a
    verify forward (drafted ids after it) and in a prefill, bit for bit."""
    runner: Any = fast_bundled.runner
    ids = fast_bundled.tokenize("Name three colours, then three animals, then three trees.")
    runner.reset()
    whole = runner.extend(ids, last_only=True)[-1]
    runner.reset()
    runner.extend(ids[:-1], last_only=True)
    single = runner.extend(ids[-1:], last_only=True)[-1]
    runner.crop(len(ids) - 1)
    verify = runner.extend([ids[-1], 11, 22, 33])[0]
    assert bool((single == whole).all()) and bool((single == verify).all())
    runner.reset()


@pytest.mark.parametrize("matrix_type", ["Q4_1", "Q8_0", "Q5_0"])
def test_every_row_rounds_alone_on_tiny_gguf_quant_mixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, matrix_type: str
) -> None:
    """Layer matrices of one type beside Q8_0 tied embeddings: 24 ids run one at a time, and
    the same ids run as drafts of 1, 3 and 8 after each accepted prefix, give the same logits
    bit for bit (a random model does not quote, so its greedy reply would draft nothing)."""
    from tests.engine.support.fast_runner import build_fast_runner
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    runner: Any = build_fast_runner(write_tiny_gguf(tmp_path / "t.gguf", matrix_type=matrix_type))
    prompt = [17, 40, 99, 5, 230, 61, 8, 17, 40, 99, 5, 230, 61, 8]
    ids = [int(x) for x in np.random.default_rng(1).integers(0, 256, 24)]
    runner.reset()
    runner.extend(prompt, last_only=True)
    single = np.stack([runner.extend([i], last_only=True)[0] for i in ids])
    for size in (2, 4, 9):  # a sampled token and 1, 3 or 8 drafted ids
        runner.crop(len(prompt))
        rows = np.concatenate([runner.extend(ids[j : j + size]) for j in range(0, 24, size)])
        assert bool((rows[:24] == single).all()), f"{matrix_type}: {size}-row runs round apart"


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
