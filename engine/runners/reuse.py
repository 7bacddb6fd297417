"""Which of a runner's cached tokens a later request may reuse and still get exact numbers.

Owns the bookkeeping behind `engine.runners.onnx_runner.OnnxRunner`'s ``reusable_length`` and
``exact_from``: how many leading cached tokens have K/V that a cold prefill would compute
bitwise alike, updated after each run, cut by ``crop`` and carried by snapshots; and the cache
length below which runs of a graph with wide heads round apart from longer ones. Does not own
whether a 1-token step is exact (the runner's ``exact_steps``: its graph and
``paired_decode``), the cache itself, or what reuses it (`engine.kv_cache`).
"""

from __future__ import annotations

from engine.arch.hparams import HParams

# GroupQueryAttention of heads wider than WIDE_HEAD rounds a row one way in a run of at most
# SHORT_TOTAL keys (cache + run) and another in a longer run (measured: real Gemma 3 270M and
# tiny gemma3 with head_dim 256, not 128; an ONNX Runtime/MLAS path choice), so rows of such
# runs are not what a longer cold prefill computes (`Reuse.exact_from`). Graphs on the
# kernel's HearthAttention have no such lengths (`engine.fastpath.attention_op`).
WIDE_HEAD, SHORT_TOTAL = 128, 64
# The same holds past it, every KEY_BLOCK keys: a row rounds one way while its run's keys end at
# or below SHORT_TOTAL + KEY_BLOCK·k and another just past it (measured: real Gemma 3 270M and
# the synthetic Qwen3.5-0.8B, a 1-token step against the same row of a verify run, differ
# exactly where the two totals fall on either side of 64, 192, 320, 448, ...).
KEY_BLOCK = 128


class Reuse:
    """The reusable prefix of one runner's cache.

    Runs of >= 2 tokens agree bitwise however a sequence is chunked, and so do 1-token runs
    (decode steps) where the runner's ``exact_steps`` holds: there a reply's K/V are reused as
    decoded and `engine.kv_cache.settle` has nothing to redo. Elsewhere a step rounds apart (a
    hybrid's DeltaNet step on ONNX ops, not the kernel's; with ``paired_decode`` off, MLAS's
    M == 1 kernel: logits up to 1.3 apart on the bundled SmolLM2, enough to change a greedy
    reply), so only the prefix written by longer runs is reused by a later request
    (`engine.kv_cache.reuse_prefix`): the same prompt gives the same reply, cold or cached.
    """

    def __init__(self, hp: HParams, n_layers: int, kernel_attention: bool = False) -> None:
        # (GroupQueryAttention's quirk: the kernel's HearthAttention rounds every row alike)
        wide = not kernel_attention and any(
            hp.head_dim_at(i) > WIDE_HEAD for i in range(n_layers) if not hp.is_recurrent(i)
        )
        # The cache length from which 1-token steps are exact: 0, or SHORT_TOTAL on a graph with
        # heads wider than WIDE_HEAD, where a run that ends within the first SHORT_TOTAL
        # positions rounds apart from a longer run (so the loop speculates only after a prompt
        # of at least this many tokens, and such runs are not reusable: `settle` redoes them).
        self.exact_from = SHORT_TOTAL if wide else 0
        self.reusable = 0  # leading cached tokens a cold prefill would compute alike

    def exact_rows(self, cached: int, rows: int) -> int:
        """How many of ``rows`` tokens (at least 1) a run after ``cached`` tokens may take and
        still round each row as its 1-token step (keys: its position + 2, the padded row):
        on wide heads a run's keys and its rows' steps' keys must not straddle a boundary
        (`KEY_BLOCK`), so a speculative verify is cut short there."""
        if not self.exact_from:
            return rows
        first = cached + 2  # the keys of the first row's step; boundaries are SHORT_TOTAL + kB
        boundary = SHORT_TOTAL + max(0, -(-(first - SHORT_TOTAL) // KEY_BLOCK)) * KEY_BLOCK
        return max(1, min(rows, boundary - cached - 1))

    def length(self, cached: int) -> int:
        """The reusable prefix of a cache of ``cached`` tokens."""
        return min(self.reusable, cached)

    def track(self, start: int, count: int, exact_steps: bool) -> None:
        """After a run of ``count`` tokens at ``start``."""
        if start + count <= self.exact_from:  # rounds apart from a longer run
            self.reusable = min(self.reusable, start)
        elif (count >= 2 or exact_steps) and start <= self.reusable:
            self.reusable = start + count
        elif count == 1:
            self.reusable = min(self.reusable, start)

    def cut(self, n: int) -> None:
        """The cache was cropped to ``n`` tokens."""
        self.reusable = min(self.reusable, n)
