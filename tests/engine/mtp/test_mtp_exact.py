"""Qwen3.5's MTP block as a drafter: greedy ids are bitwise those of plain decoding.

A synthetic qwen35 GGUF with an MTP block (random weights, `bench.synth.qwen35`) on the fast
path. A verified draft is a 2-row forward; the graph steps its DeltaNet layers once per row
(as two decode steps do) and pads a 1-token step's attention and float projections to two
rows, so each row rounds as a decode step; a rejected draft rolls the recurrent state back
to the state after the first row (kept from the same run), with no recomputation.
Random weights draft badly, so one run also mixes in the true next token (taken from the
plain run) to exercise accepted drafts as well as rejected ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGUFReader

from bench.synth.qwen35 import write_tiny_qwen35
from engine import generate
from engine.engine import Engine
from engine.mtp.block import read_mtp_block
from engine.mtp.drafter import MtpDrafter, mtp_drafter
from engine.speculative import DraftVerifier
from engine.types import Finished, GenerationRequest, Message, SamplingParams
from tests.engine.support.fast_runner import build_fast_runner

PROMPT = [17, 40, 99, 5, 230, 61, 8, 17, 40, 99, 5, 230, 61, 8, 3, 77]
STEPS = 72
GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=64)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("mtp")) / "qwen35-mtp.gguf"
    write_tiny_qwen35(path, "Q4_K_M")
    runner = build_fast_runner(path)
    if runner is None:
        pytest.skip("the fast path declined the synthetic qwen35")
    return runner


def plain_ids(runner: Any) -> list[int]:
    runner.reset()
    logits = runner.extend(PROMPT, last_only=True)[0]
    ids = []
    for _ in range(STEPS):
        ids.append(int(np.argmax(logits)))
        logits = runner.extend([ids[-1]], last_only=True)[0]
    return ids


def speculative_ids(runner: Any, drafter: Callable[[Sequence[int], int], list[int]]) -> Any:
    runner.reset()
    logits = runner.extend(PROMPT, last_only=True)[0]
    verifier = DraftVerifier(runner, drafter=drafter)
    ids: list[int] = []
    for _ in range(STEPS):
        ids.append(int(np.argmax(logits)))
        logits = verifier.next_logits(ids[-1], PROMPT + ids)
    return ids, verifier


def test_the_runner_drafts_with_the_files_mtp_block(runner: Any) -> None:
    assert runner.exact_pairs
    drafter = mtp_drafter(runner)
    assert isinstance(drafter, MtpDrafter)
    assert drafter.block.layer == runner.hparams.n_layers


def test_mtp_speculation_gives_the_plain_greedy_ids(runner: Any) -> None:
    plain = plain_ids(runner)
    drafter = mtp_drafter(runner)
    assert drafter is not None
    ids, verifier = speculative_ids(runner, drafter)
    assert verifier.drafted > 0 and drafter.drafts > 0  # some forwards were 2-row verifies
    assert ids == plain


def test_accepted_and_rejected_drafts_keep_the_ids_and_the_state(runner: Any) -> None:
    plain = plain_ids(runner)
    state = [b.copy() for b in runner._recurrent.sets[runner._recurrent.current]]
    drafter = mtp_drafter(runner)
    assert drafter is not None
    calls = 0

    def mixed(context: Sequence[int], budget: int) -> list[int]:
        nonlocal calls
        calls += 1
        mtp = drafter(context, budget)
        at = len(context) - len(PROMPT)  # the index in `plain` of the token drafted
        if calls % 2 and at < len(plain):
            return [plain[at]]  # right: held
        return [(plain[at] + 1) % runner.vocab_size] if at < len(plain) else mtp  # wrong

    ids, verifier = speculative_ids(runner, mixed)
    assert ids == plain
    assert 0 < verifier.accepted < verifier.drafted  # both kinds happened
    # the same cached ids and recurrent state as plain decoding, bit for bit
    verifier.discard()
    assert runner.cached_ids == PROMPT + plain[:-1] or runner.cached_ids == PROMPT + plain
    if runner.cached_ids == PROMPT + plain[:-1]:
        runner.extend([plain[-1]], last_only=True)
    live = runner._recurrent.sets[runner._recurrent.current]
    assert all(np.array_equal(a, b) for a, b in zip(live, state, strict=True))


def test_the_loop_drafts_with_the_mtp_block_and_keeps_the_reply(
    runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine asked to speculate on a Qwen3.5 file with an MTP block drafts from it (not
    from the prompt) and gives the plain greedy reply."""
    made: list[DraftVerifier] = []

    def verifier(*args: Any, **kwargs: Any) -> DraftVerifier:
        made.append(DraftVerifier(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(generate, "DraftVerifier", verifier)
    engine = Engine(runner.source, speculative=True)
    try:
        assert engine.info.backend == "onnx"
        replies = []
        for speculative in (False, True):
            engine.runner.reset()
            engine.speculative = speculative
            request = GenerationRequest((Message("user", "one two three four"),), GREEDY, "mtp")
            done = list(engine.generate(request))[-1]
            assert isinstance(done, Finished)
            replies.append(list(done.token_ids))
    finally:
        engine.close()
    assert len(made) == 1 and isinstance(made[0].drafter, MtpDrafter)
    assert made[0].drafted > 0
    assert replies[0] == replies[1]


def test_a_restored_cache_drafts_without_another_conversations_rows(runner: Any) -> None:
    """A parked conversation comes back without its residual-stream rows (the runner keeps one
    set, the last computed): the drafter makes no MTP entries from the other conversation's."""
    drafter = mtp_drafter(runner)
    assert drafter is not None
    runner.reset()
    runner.extend(PROMPT, last_only=True)
    assert drafter([*PROMPT, 3], 1)
    assert drafter.made[: len(PROMPT)].all()
    parked = runner.snapshot()
    other = [9, 8, 7, 6, 5, 4, 3, 2, 1, 90, 80, 70, 60, 50, 40, 30, 20]
    runner.reset()
    runner.extend(other, last_only=True)
    assert drafter([*other, 3], 1)
    runner.restore(parked)
    assert runner.hidden_from == len(PROMPT)
    runner.extend([3], last_only=True)  # the restored conversation goes on: its rows from here
    assert drafter([*PROMPT, 3, 4], 1)
    assert not drafter.made[: len(PROMPT)].any()
    assert drafter.made[len(PROMPT)]


def test_the_draft_head_is_the_first_rows_of_the_models_head(runner: Any) -> None:
    """The drafter's trimmed head computes exactly the first rows of the file's head."""
    reader = GGUFReader(str(runner.source))
    whole = read_mtp_block(reader, runner.hparams)
    trimmed = read_mtp_block(reader, runner.hparams, draft_vocab=1000)
    assert whole is not None and trimmed is not None
    assert (whole.matrices["head"].rows, trimmed.matrices["head"].rows) == (runner.vocab_size, 1000)
    x = np.random.default_rng(2).standard_normal((1, runner.hparams.hidden)).astype(np.float32)
    assert np.array_equal(trimmed.matrices["head"](x), whole.matrices["head"](x)[:, :1000])
