"""The verifier's ledger leaves a drafter's one-off work out of what a draft cost.

The MTP drafter catches up on a prompt at its first proposal (one more layer's prefill); were
that charged to the first draft forwards, the per-reply ledger could call drafting a loss
from them and switch it off for the whole reply.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.speculative import PLAIN_SAMPLES, DraftVerifier


class Runner:
    """Enough of a runner for the verifier: ids, logits rows of zeros."""

    context_window = 64

    def __init__(self) -> None:
        self.cached_ids: list[int] = []

    def extend(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        self.cached_ids += list(ids)
        rows = np.zeros((len(ids), 4), np.float32)
        return rows[-1:] if last_only else rows

    def crop(self, n: int) -> None:
        del self.cached_ids[n:]


class Drafter:
    """Drafts id 1; its first call also does ``first_s`` seconds of one-off work."""

    def __init__(self, first_s: float) -> None:
        self.first_s, self.setup_s = first_s, 0.0

    def __call__(self, context: Sequence[int], budget: int) -> list[int]:
        self.setup_s, self.first_s = self.setup_s + self.first_s, 0.0
        return [1]

    def take_setup_s(self) -> float:
        spent, self.setup_s = self.setup_s, 0.0
        return spent


def draft_seconds(setup_s: float) -> float:
    now = [0.0]

    def clock() -> float:  # each reading 10 s after the last
        now[0] += 10.0
        return now[0]

    verifier = DraftVerifier(Runner(), clock=clock, drafter=Drafter(setup_s))
    ids = [0]
    for _ in range(PLAIN_SAMPLES + 1):  # the plain yardstick, then one draft forward
        verifier.next_logits(ids[-1], ids)
        ids.append(0)
    assert verifier.ledger.draft_forwards == 1
    return verifier.ledger.draft_s


def test_a_drafters_setup_is_not_a_drafts_cost() -> None:
    assert draft_seconds(0.0) == 10.0  # one reading before the propose, one after the forward
    assert draft_seconds(5.0) == 5.0
