"""Prompt-lookup drafting and the draft verifier: drafts are right, output is unchanged.

The verifier runs against real Runners: the tiny random Llama (shared fixture) in float64,
where batched and single-token forwards agree to rounding, so speculative and plain decoding
must give identical tokens; and the ONNX fast path on a tiny GGUF for cache consistency.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from engine.speculative import (
    ROW_COST_PRIOR,
    DraftVerifier,
    SpeedLedger,
    best_draft,
    propose_draft,
)


def test_draft_continues_the_latest_earlier_match() -> None:
    ids = [1, 2, 3, 4, 9, 1, 2, 3, 5, 6, 1, 2, 3]
    assert propose_draft(ids, ngram_max=3, num_draft=2) == [5, 6]


def test_longer_ngram_wins_over_a_more_recent_shorter_one() -> None:
    ids = [3, 1, 2, 7, 1, 2, 8, 3, 1, 2]
    assert propose_draft(ids, ngram_max=3, num_draft=1) == [7]
    assert propose_draft(ids, ngram_max=2, num_draft=1) == [8]


def test_draft_is_capped_and_may_run_into_the_suffix() -> None:
    ids = [4, 5, 6, 4, 5]
    assert propose_draft(ids, ngram_max=2, num_draft=8) == [6, 4, 5]
    assert propose_draft(ids, ngram_max=2, num_draft=1) == [6]


def test_no_match_no_draft() -> None:
    assert propose_draft([1, 2, 3, 4]) == []
    assert propose_draft([7]) == []
    assert propose_draft([]) == []
    assert propose_draft([1, 2, 1, 2], num_draft=0) == []
    assert propose_draft([9, 1, 8, 1], ngram_min=2) == []  # only a 1-gram matches
    assert propose_draft([9, 1, 8, 1], ngram_min=1) == [8, 1]


def _decode(
    runner: Any, prompt: list[int], steps: int, pick: Callable[[Any], int], spec: bool
) -> tuple[list[int], DraftVerifier | None]:
    """The loop's shape: sample from logits, then get the next logits (plain or verified)."""
    runner.reset()
    verifier = DraftVerifier(runner, ngram_min=1) if spec else None
    logits = runner.extend(prompt, last_only=True)[0]
    out: list[int] = []
    for _ in range(steps):
        out.append(pick(logits))
        if verifier is None:
            logits = runner.extend(out[-1:], last_only=True)[0]
        else:
            logits = verifier.next_logits(out[-1], prompt + out)
    return out, verifier


@pytest.fixture(scope="module")
def float64_runner(tiny_model_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    from engine.runners.torch_runner import TorchRunner

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()
    return TorchRunner(model, context_window=1024)


PROMPT = [510, 3458, 314, 2030, 30, 510, 3458, 314, 2030, 30, 510, 3458]


def test_speculative_greedy_equals_plain_greedy(float64_runner: Any) -> None:
    greedy = lambda logits: int(logits.argmax())  # noqa: E731
    plain, _ = _decode(float64_runner, PROMPT, 40, greedy, spec=False)
    fast, verifier = _decode(float64_runner, PROMPT, 40, greedy, spec=True)
    assert fast == plain
    assert verifier is not None and verifier.drafted > 0
    assert verifier.forwards + verifier.accepted == 40  # every step was a forward or a hit


def test_speculative_sampling_equals_plain_sampling(float64_runner: Any) -> None:
    """The rows are the model's own logits, so even seeded sampling is unchanged."""

    def sampler() -> Callable[[Any], int]:
        rng = torch.Generator().manual_seed(7)
        return lambda logits: int(
            torch.multinomial((torch.from_numpy(logits) / 0.8).softmax(-1), 1, generator=rng)
        )

    plain, _ = _decode(float64_runner, PROMPT, 30, sampler(), spec=False)
    fast, _ = _decode(float64_runner, PROMPT, 30, sampler(), spec=True)
    assert fast == plain


def test_rejected_drafts_leave_a_consistent_cache(tmp_path: Path, monkeypatch: Any) -> None:
    from tests.engine.support.fast_runner import build_fast_runner
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    # Float activations: only the cache bookkeeping is under test, so results must agree closely.
    runner = build_fast_runner(write_tiny_gguf(tmp_path / "tiny.gguf"), accuracy=0)
    prompt = [9, 8, 7, 6, 9, 8, 7, 6, 9, 8]
    # Forced tokens that disagree with the drafts ([7, 6, ...]) half of the time.
    forced = [7, 1, 9, 8, 7, 6, 2, 8, 7, 3]
    verifier = DraftVerifier(runner, ngram_min=1)
    runner.extend(prompt, last_only=True)
    for i, token in enumerate(forced):
        logits = verifier.next_logits(token, prompt + forced[: i + 1])
        cached = runner.cached_ids
        assert cached[: len(prompt) + i + 1] == prompt + forced[: i + 1]
    verifier.discard()
    assert runner.cached_ids == prompt + forced
    runner.reset()
    fresh = runner.extend(prompt + forced, last_only=True)[0]
    torch.testing.assert_close(torch.from_numpy(logits), torch.from_numpy(fresh), atol=1e-4, rtol=0)


class _RowClock:
    """A clock the runner's forwards advance: a forward of n rows costs ``cost(n)`` seconds.

    Wall time on a shared CI machine says nothing reliable, so the test sets what a verify
    forward costs and checks the ledger's decision, on the real float64 runner."""

    def __init__(self, runner: Any, cost: Callable[[int], float]) -> None:
        self.now = 0.0
        plain = runner.extend

        def extend(ids: Any, last_only: bool = False) -> Any:
            self.now += cost(len(ids))
            return plain(ids, last_only=last_only)

        runner.extend = extend

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("cost", "switched_off"),
    [(lambda n: 1.0 if n == 1 else 1.5 * n, True), (lambda n: 1.0 + 0.05 * (n - 1), False)],
    ids=["rows-dear: a row costs 1.5 steps", "rows-cheap: 5% a row"],
)
def test_drafting_stops_for_the_reply_once_it_is_slower(
    float64_runner: Any, cost: Callable[[int], float], switched_off: bool
) -> None:
    """Why: on the real 151k-vocabulary Qwen a verify row costs nearly a full step, and
    speculation ran at 0.68x plain; the ledger must stop it, and keep it where it pays."""
    greedy = lambda logits: int(logits.argmax())  # noqa: E731
    plain, _ = _decode(float64_runner, PROMPT, 40, greedy, spec=False)
    clock = _RowClock(float64_runner, cost)
    try:
        float64_runner.reset()
        verifier = DraftVerifier(float64_runner, ngram_min=1, clock=clock)
        logits = float64_runner.extend(PROMPT, last_only=True)[0]
        out: list[int] = []
        for _ in range(40):
            out.append(greedy(logits))
            logits = verifier.next_logits(out[-1], PROMPT + out)
    finally:
        del float64_runner.extend
    assert out == plain  # the decision never changes the tokens
    assert verifier.switched_off is switched_off
    if switched_off:  # off after the ledger's minimum of draft forwards, never again
        assert verifier.ledger.draft_forwards == 6
    else:
        assert verifier.accepted > 10 and verifier.forwards < 30


def test_a_draft_is_only_as_long_as_pays_at_the_measured_cost() -> None:
    """Why: on the real Qwen2.5-0.5B a verify of 1 + 8 rows cost 14 plain steps before the
    kernel's many-row dots, 1 + 2 rows 2.5: a fixed draft length lost wherever rows were dear.
    `best_draft` weighs the expected tokens (1 + p + ... + p^k) against c(k) = 1 + alpha k."""
    assert best_draft(0.9, 0.1, 8) == 8  # cheap rows, drafts that hold: the longest
    assert 1 <= best_draft(0.9, 0.6, 8) <= 3  # dear rows: a short draft
    assert best_draft(0.3, 0.3, 8) == 0  # chat: nothing pays
    assert best_draft(0.95, 1.2, 8) == 0  # a row dearer than a step: never


def test_the_ledger_fits_the_row_cost_and_the_acceptance() -> None:
    """alpha from timed forwards (plain steps 10 ms, 1 + 4-row forwards 30 ms: alpha -> 0.5,
    pulled a little toward the prior), acceptance from drafts' outcomes."""
    ledger = SpeedLedger(clock=lambda: 0.0)
    assert ledger.row_cost() == ROW_COST_PRIOR
    ledger.plain_s, ledger.plain_tokens = 0.1, 10
    ledger.draft_s, ledger.draft_forwards, ledger.draft_rows = 0.3 * 10, 100, 400
    assert ROW_COST_PRIOR < ledger.row_cost() < 0.5
    assert ledger.row_cost() == pytest.approx(0.5, abs=0.01)
    for _ in range(20):
        ledger.draft_ended(1, cut=True)  # one id held, then a wrong one
    assert ledger.acceptance() == pytest.approx(0.5, abs=0.05)
    for _ in range(20):
        ledger.draft_ended(8, cut=False)  # quoting: whole drafts hold
    assert ledger.acceptance() > 0.9


class _RollbackRunner:
    """A runner whose forwards take no time and whose crop takes 5 s (a hybrid's rollback runs
    the kept ids again): what the ledger charges drafting for."""

    context_window = 1000

    def __init__(self) -> None:
        self.cached_ids: list[int] = []
        self.now = 0.0

    def extend(self, ids: list[int], last_only: bool = False) -> Any:
        self.cached_ids += ids
        return np.zeros((1 if last_only else len(ids), 8), np.float32)

    def crop(self, n: int) -> None:
        self.now += 5.0
        del self.cached_ids[n:]


def test_a_rollbacks_time_counts_as_drafting() -> None:
    """Why: on a hybrid a rejected draft costs a rollback too; the ledger must weigh it when it
    decides whether drafting pays (elsewhere a crop costs next to nothing)."""
    runner = _RollbackRunner()
    verifier = DraftVerifier(runner, ngram_min=1, clock=lambda: runner.now)
    context = [1, 2, 3, 1, 2]
    runner.extend(context[:-1])  # the cache holds all but the token about to run
    for token in (2, 3, 1):  # two plain steps (the yardstick), then a draft (2) after 1
        context = [*context[:-1], token] if token == 2 else [*context, token]
        verifier.next_logits(token, context)
    assert verifier.drafted == 1 and verifier.ledger.draft_s == 0.0
    verifier.next_logits(7, [*context, 7])  # not the drafted 2: the draft is cut
    assert verifier.ledger.draft_s == 5.0
