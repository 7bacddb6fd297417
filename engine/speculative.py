"""Prompt-lookup speculative decoding: n-gram drafts verified in one forward, output unchanged.

Owns two things:
- `propose_draft`: a pure function that looks for the most recent earlier occurrence of the
  last few tokens and proposes the tokens that followed it (summaries, rewrites and code edits
  repeat long runs of the prompt, so these drafts are often right).
- `DraftVerifier`: a drop-in for the loop's per-token ``runner.extend([token])``. It appends the
  sampled token AND a draft in one forward, keeps the logits rows of the drafted positions, and
  answers the following calls from those rows (no forward) for as long as the loop's sampled
  tokens equal the draft. On the first mismatch it crops the unverified tail off the cache.

Why the output is unchanged: the rows are the model's own logits for exactly the prefix the loop
has produced, so the loop samples (greedy or not, any live parameter) from the same logits it
would otherwise get; only batched-vs-single-token rounding differs (on the int8 ONNX path that
can flip a near tie). Does not own sampling or the loop (`engine.generate` calls it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

NGRAM_MAX = 3
NUM_DRAFT = 8


def propose_draft(
    ids: Sequence[int] | np.ndarray,
    ngram_max: int = NGRAM_MAX,
    num_draft: int = NUM_DRAFT,
    ngram_min: int = 1,
) -> list[int]:
    """Up to ``num_draft`` ids that followed the latest earlier match of ``ids``' last n-gram.

    Tries n = ngram_max down to ngram_min and takes the most recent earlier occurrence of the
    last n ids whose continuation is non-empty. Returns [] when nothing matches.
    """
    arr = np.asarray(ids, dtype=np.int64)
    length = len(arr)
    if num_draft < 1:
        return []
    for n in range(min(ngram_max, length - 1), ngram_min - 1, -1):
        suffix = arr[length - n :]
        # Candidate starts i (match arr[i:i+n] == suffix) strictly before the suffix itself.
        starts = length - n
        hits = np.ones(starts, dtype=bool)
        for j in range(n):
            hits &= arr[j : j + starts] == suffix[j]
        found = np.flatnonzero(hits)
        if len(found):
            begin = int(found[-1]) + n
            return [int(x) for x in arr[begin : begin + num_draft]]
    return []


class DraftVerifier:
    """Replaces ``runner.extend([token], last_only=True)[0]`` in the decode loop (see above).

    Adapts the draft length: a rejected draft halves the next one (down to 0, which means plain
    single-token steps until a later match is accepted again), so chat that repeats nothing
    pays little for trying.
    """

    def __init__(
        self,
        runner: Any,
        ngram_max: int = NGRAM_MAX,
        num_draft: int = NUM_DRAFT,
        ngram_min: int = 2,
    ) -> None:
        self.runner = runner
        self.ngram_max, self.ngram_min = ngram_max, ngram_min
        self.max_draft = num_draft
        self._budget = num_draft  # current draft length, adapted to the acceptance
        self._cooldown = 0  # single-token steps left before drafting again
        self._draft: list[int] = []  # drafted ids not yet consumed, in order
        self._rows: Any = None  # logits rows after each drafted id: (len(_draft), V)
        self.forwards = 0
        self.drafted = 0
        self.accepted = 0

    def next_logits(self, token: int, context: Sequence[int] | np.ndarray) -> Any:
        """Logits (V,) for the position after ``token``; ``context`` ends with ``token``."""
        if self._draft:
            if token == self._draft[0]:
                row = self._rows[0]
                self._draft, self._rows = self._draft[1:], self._rows[1:]
                self.accepted += 1
                if not self._draft:  # the whole draft held: allow longer ones again
                    self._budget = min(self.max_draft, self._budget * 2)
                return row
            self._reject()
        draft = self._propose(context)
        self.forwards += 1
        if not draft:
            return self.runner.extend([token], last_only=True)[0]
        rows = self.runner.extend([token, *draft])  # (1 + k, V)
        self.drafted += len(draft)
        self._draft, self._rows = draft, rows[1:]
        return rows[0]

    def discard(self) -> None:
        """Drop the unverified tail (call before the loop extends the runner by other means)."""
        if self._draft:
            self.runner.crop(len(self.runner.cached_ids) - len(self._draft))
            self._draft, self._rows = [], None

    def _reject(self) -> None:
        self.discard()
        self._budget //= 2
        if self._budget == 0:
            self._cooldown, self._budget = 16, self.max_draft

    def _propose(self, context: Sequence[int] | np.ndarray) -> list[int]:
        if self._cooldown:
            self._cooldown -= 1
            return []
        room = self.runner.context_window - len(self.runner.cached_ids) - 1
        budget = min(self._budget, room)
        return propose_draft(context, self.ngram_max, budget, self.ngram_min) if budget > 0 else []
