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
would otherwise get. Bitwise so in float64 torch and on the ONNX fast path, where a 1-token
step's attention runs as row 0 of a 2-row run (`engine.fastpath.graph._one_row_pad`: ORT's
M == 1 kernel used to round apart, grown to ~1 logit by int8 activations, and replies parted
at near ties): `tests/engine/loop/test_speculative_fastpath.py`.
Whether drafting pays is measured per reply, not assumed: `SpeedLedger` times the verifier's
plain steps and its draft forwards. A verify forward of 1 + k rows costs c(k) plain steps, so
drafting breaks even at an acceptance of (c(k) - 1) / k; c(k) depends on the model (a
151k-vocabulary head makes every row dear), the kernel, the machine and its load. So the
ledger fits c(k) = 1 + alpha * k to the forwards it timed (`SpeedLedger.row_cost`) and
estimates how often a drafted id holds (`SpeedLedger.acceptance`), and each draft is only as
long as pays under both (`best_draft`; where none pays, one id, a cheap probe); once drafting
has made fewer tokens per second than plain steps it stops for the rest of the reply (the
backstop that keeps a reply from running slower than plain; docs/performance.md has measured
c(k)).
Does not own sampling or the loop (`engine.generate` calls it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

NGRAM_MAX = 3
NUM_DRAFT = 8
COOLDOWN_MAX = 32  # plain steps after consecutive drafts of which nothing held: 4, 8, ... 32
PLAIN_SAMPLES = 2  # plain steps timed before the first draft (the ledger's yardstick)
LEDGER_FORWARDS = 6  # draft forwards before the ledger may call drafting a loss
ROW_COST_PRIOR = 0.3  # alpha before any verify was timed (c(8) = 3.4: the C kernel's fused rows)
PRIOR_ROWS = 4  # how many drafted rows the prior weighs as
ACCEPT_DECAY = 0.8  # weight of the earlier drafts' outcomes at each new one's


def best_draft(acceptance: float, row_cost: float, longest: int) -> int:
    """The draft length k (0..longest) that makes the most tokens per plain step's time.

    A forward of 1 + k rows costs 1 + row_cost * k plain steps and yields 1 + p + ... + p^k
    tokens on average when each drafted id holds with probability p (given that the ones
    before it held). 0 when no length beats a plain step."""
    best, best_gain, tokens, p = 0, 1.0, 1.0, 1.0
    for k in range(1, longest + 1):
        p *= acceptance
        tokens += p
        gain = tokens / (1.0 + row_cost * k)
        if gain > best_gain:
            best, best_gain = k, gain
    return best


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


class SpeedLedger:
    """Seconds and tokens of a reply's plain steps and of its draft forwards.

    A draft forward's tokens are its first row plus each drafted row the loop accepted; its
    seconds are the forward's (rows served from a held draft cost no forward)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.plain_s = self.draft_s = 0.0
        self.plain_tokens = self.draft_tokens = self.draft_forwards = 0
        self.draft_rows = 0  # drafted ids the timed forwards carried (k summed)
        self.held = self.stops = 0.0  # drafted ids that held, drafts a wrong id cut (decayed)

    def row_cost(self) -> float:
        """alpha in c(k) = 1 + alpha * k, fitted to the timed forwards (with a weak prior)."""
        if not self.plain_tokens or self.plain_s <= 0.0:
            return ROW_COST_PRIOR
        step = self.plain_s / self.plain_tokens
        extra = self.draft_s - self.draft_forwards * step  # seconds beyond a plain step
        rows = self.draft_rows + PRIOR_ROWS
        return max(0.0, (extra + ROW_COST_PRIOR * PRIOR_ROWS * step) / (rows * step))

    def acceptance(self) -> float:
        """How often a drafted id holds given the ones before it did (recent drafts weigh more)."""
        return (self.held + 1.0) / (self.held + self.stops + 2.0)

    def draft_ended(self, held: int, cut: bool) -> None:
        """A draft's outcome: ``held`` of its ids held, and whether a wrong one cut it short."""
        self.held = self.held * ACCEPT_DECAY + held
        self.stops = self.stops * ACCEPT_DECAY + (1.0 if cut else 0.0)

    def losing(self) -> bool:
        """Drafting has had its chance and made tokens slower than plain steps."""
        if self.plain_tokens < PLAIN_SAMPLES or self.draft_forwards < LEDGER_FORWARDS:
            return False
        # tokens/s compared by cross-multiplying (no division by a zero-second clock)
        return self.draft_tokens * self.plain_s < self.plain_tokens * self.draft_s


class DraftVerifier:
    """Replaces ``runner.extend([token], last_only=True)[0]`` in the decode loop (see above).

    Adapts the draft length, because a rejected draft costs real time on CPU (a 9-token forward
    of the int8 ONNX path costs ~3 single-token ones): drafts start at 2 ids and double while
    they hold entirely; a partly held draft keeps the length; a draft of which nothing held
    pauses drafting (4 steps, doubling per consecutive miss, up to `COOLDOWN_MAX`). Measured on
    the bundled model: chat ~1.0x (no slowdown beyond noise), rewrite 2.5x, summarise 2.7-3.1x;
    again at load ~3 on 128 tokens: chat 0.98-1.03x, rewrite 2.6-3.0x, code 1.35-1.41x.
    """

    def __init__(
        self,
        runner: Any,
        ngram_max: int = NGRAM_MAX,
        num_draft: int = NUM_DRAFT,
        ngram_min: int = 2,
        clock: Callable[[], float] = time.perf_counter,
        drafter: Callable[[Sequence[int] | np.ndarray, int], list[int]] | None = None,
    ) -> None:
        # ``drafter(context, budget)``: drafts from elsewhere than the prompt (Qwen3.5's MTP
        # block, `engine.mtp`); its time counts as the draft forward's (less what its
        # ``take_setup_s()`` says was one-off), and a draft of which nothing held does not
        # pause drafting (a model's drafts miss often and cheaply).
        self.drafter = drafter
        self.runner = runner
        self.ledger = SpeedLedger(clock)
        self.switched_off = False  # the ledger found drafting slower: plain for the rest
        self.ngram_max, self.ngram_min = ngram_max, ngram_min
        self.max_draft = num_draft
        self._budget = min(2, num_draft)  # current draft length: starts short, grows on success
        self._cooldown = 0  # single-token steps left before drafting again
        self._run = 0  # drafted ids accepted since the current draft was proposed
        self._misses = 0  # consecutive drafts of which nothing held
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
                self.ledger.draft_tokens += 1
                self._run += 1
                self._misses = 0
                if not self._draft:  # the whole draft held: allow longer ones again
                    self._budget = min(self.max_draft, self._budget * 2)
                    self.ledger.draft_ended(self._run, cut=False)
                return row
            # A hybrid's rollback runs the accepted ids again (`OnnxRunner.crop`): a cost of
            # drafting, which the ledger must weigh (elsewhere a crop costs next to nothing).
            began = self.ledger.clock()
            self._reject()
            self.ledger.draft_s += self.ledger.clock() - began
        ledger = self.ledger
        began = ledger.clock()
        draft = self._propose(context)
        self.forwards += 1
        start = began if self.drafter is not None else ledger.clock()
        # A drafter's one-off work (the MTP block catching up on a prompt: prefill work, not a
        # draft's) is left out of the speeds the ledger compares.
        start += getattr(self.drafter, "take_setup_s", lambda: 0.0)()
        if not draft:
            row = self.runner.extend([token], last_only=True)[0]
            ledger.plain_s += ledger.clock() - start
            ledger.plain_tokens += 1
            return row
        rows = self.runner.extend([token, *draft])  # (1 + k, V)
        ledger.draft_s += ledger.clock() - start
        ledger.draft_tokens += 1
        ledger.draft_forwards += 1
        ledger.draft_rows += len(draft)
        self._run = 0
        self.drafted += len(draft)
        self._draft, self._rows = draft, rows[1:]
        return rows[0]

    def discard(self) -> None:
        """Drop the unverified tail (call before the loop extends the runner by other means)."""
        if self._draft:
            self.runner.crop(len(self.runner.cached_ids) - len(self._draft))
            self._draft, self._rows = [], None

    def _reject(self) -> None:
        """A drafted id was wrong: keep the length if part held, else pause drafting."""
        self.discard()
        self.ledger.draft_ended(self._run, cut=True)
        if self._run or self.drafter is not None:  # part held (a copying stretch: keep the
            self._misses = 0  # length, shrinking cost more), or a model's draft (no pause)
        else:  # nothing held: ordinary chat, most likely; pause, longer after each miss
            self._misses += 1
            self._cooldown = min(COOLDOWN_MAX, 2 ** (self._misses + 1))
            self._budget = min(2, self.max_draft)

    def _propose(self, context: Sequence[int] | np.ndarray) -> list[int]:
        if self.switched_off or self.ledger.plain_tokens < PLAIN_SAMPLES:
            return []
        if self.ledger.losing():
            self.switched_off = True
            return []
        if self._cooldown:
            self._cooldown -= 1
            return []
        room = self.runner.context_window - len(self.runner.cached_ids) - 1
        # only as long as pays at the measured row cost and acceptance; one id (a cheap
        # probe) where none does, so a reply that starts quoting is still found
        pays = best_draft(self.ledger.acceptance(), self.ledger.row_cost(), self.max_draft)
        budget = min(self._budget, max(1, pays), room)
        # no longer than rounds as decode steps (wide heads: not across a key block's end)
        exact_rows = getattr(self.runner, "exact_rows", None)
        if exact_rows is not None:
            budget = min(budget, exact_rows(1 + budget) - 1)
        if self.drafter is not None:
            return self.drafter(context, budget) if budget > 0 else []
        return propose_draft(context, self.ngram_max, budget, self.ngram_min) if budget > 0 else []
