"""The recurrent part of a hybrid model's cache: per-layer conv and delta-rule states.

Owns, for `engine.runners.onnx_runner.OnnxRunner` over a hybrid graph (qwen35), the state
after the cached tokens of every Gated DeltaNet layer, and what makes prefix reuse possible
although a recurrent state cannot be cut back like a KV cache:

- Two buffer sets, read one / write the other, swapped after each forward: the set not
  current still holds the state from before the last forward, for free (a crop inside the
  last forward starts from there where no nearer state is known, and the runner runs the
  tokens between again; where its DeltaNets are the kernel's native ops, any run equals its
  steps bit for bit, so that is exact).
- Checkpoints: copies of the state at chosen positions (the runner saves one at the end of each
  prefill, i.e. at the end of each prompt, which is where the next turn's prompt usually parts
  from the cache, and one a few tokens before it, which the same run outputs). At most
  `MAX_CHECKPOINTS` are kept, the most recent.
- The pair point: after a verify run of 2 to `TAIL` tokens (a sampled token and its draft:
  one id from `engine.mtp`, up to eight from prompt lookup) the state after its first token,
  which that run outputs (on the kernel's native DeltaNet ops); a draft rejected from its
  first id goes back to it with one copy and nothing recomputed, one rejected later runs only
  its accepted ids again.

`best_before(n)` names the latest known state at or before position n; the runner restores
it and recomputes the tokens between, so a state is never reused for the wrong tokens and
never rebuilt from scratch when a nearer one is known. Does not own the KV buffers, the
graph or the token ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.deltanet import state_shapes

MAX_CHECKPOINTS = 8  # Qwen3.5-0.8B: ~19 MB each (18 layers x 16 heads x 128 x 128 x 4 B)
PARKED_CHECKPOINTS = 2  # kept with a parked conversation: its last prompt's end and tail


@dataclass
class RecurrentState:
    """The conv and delta states of every recurrent layer, with checkpoints by position."""

    hp: HParams
    layers: list[int] = field(init=False)
    sets: list[list[np.ndarray]] = field(init=False)  # [set][2·j + (0 conv | 1 ssm)]
    current: int = 0  # which set holds the state after the cached tokens
    previous_at: int | None = None  # position whose state the other set holds, if any
    checkpoints: dict[int, list[np.ndarray]] = field(default_factory=dict)
    # The state after the first row of the last verify run (a speculative draft's
    # rollback point), apart from the checkpoints so it never pushes a prompt's end out: the
    # run's own output values (ONNX Runtime's, buffer order), copied only on a rollback.
    pair_at: int | None = None
    pair: list[Any] | None = None

    def __post_init__(self) -> None:
        self.layers = [i for i in range(self.hp.n_layers) if self.hp.is_recurrent(i)]
        conv, ssm = state_shapes(self.hp)
        self.sets = [
            [np.zeros(s, np.float32) for _ in self.layers for s in (conv, ssm)] for _ in range(2)
        ]

    def names(self) -> list[tuple[str, str]]:
        """(input, output) graph names, in buffer order."""
        return [(f"past_{n}.{i}", f"present_{n}.{i}") for i in self.layers for n in ("conv", "ssm")]

    def tail_names(self) -> list[str]:
        """Graph outputs holding the state a few tokens before a prefill's end, buffer order."""
        return [f"tail_{n}.{i}" for i in self.layers for n in ("conv", "ssm")]

    def advanced(self, start: int) -> None:
        """A forward from position ``start`` wrote the other set: it is now current."""
        self.current, self.previous_at = 1 - self.current, start
        self.pair_at = self.pair = None

    def clear(self) -> None:
        """The empty cache: zero state, no checkpoints."""
        for buf in self.sets[self.current]:
            buf.fill(0.0)
        self.previous_at = self.pair_at = self.pair = None
        self.checkpoints.clear()

    def save(self, position: int, state: list[np.ndarray] | None = None) -> None:
        """Keep ``state`` (buffer order; default: a copy of the current state) as the state
        at ``position``."""
        self.checkpoints.pop(position, None)
        self.checkpoints[position] = state or [b.copy() for b in self.sets[self.current]]
        while len(self.checkpoints) > MAX_CHECKPOINTS:
            del self.checkpoints[next(iter(self.checkpoints))]

    def best_before(self, n: int) -> int:
        """The latest position <= n whose state is known (0: the empty state)."""
        known = [p for p in self.checkpoints if p <= n]
        if self.previous_at is not None and self.previous_at <= n:
            known.append(self.previous_at)
        if self.pair_at is not None and self.pair_at <= n:
            known.append(self.pair_at)
        return max(known, default=0)

    def rewind(self, position: int) -> None:
        """Make the state at ``position`` (from `best_before`) current; forget later ones."""
        if position == self.pair_at and self.pair is not None:
            for live, kept in zip(self.sets[self.current], self.pair, strict=True):
                live[...] = kept.numpy()
        elif position in self.checkpoints:
            for live, kept in zip(self.sets[self.current], self.checkpoints[position], strict=True):
                live[...] = kept
        elif position == self.previous_at:
            self.current = 1 - self.current
        else:  # position 0 without a checkpoint: the empty state
            for buf in self.sets[self.current]:
                buf.fill(0.0)
        self.previous_at = self.pair_at = self.pair = None
        for p in [p for p in self.checkpoints if p > position]:
            del self.checkpoints[p]

    def snapshot(self) -> tuple[list[np.ndarray], dict[int, list[np.ndarray]]]:
        """A parked copy: the current state and the newest `PARKED_CHECKPOINTS` checkpoints
        (shared, not copied: a checkpoint is never written). A parked chat comes back for its
        next turn, which parts from the cache around the end of its last prompt."""
        newest = list(self.checkpoints.items())[-PARKED_CHECKPOINTS:]
        return [b.copy() for b in self.sets[self.current]], dict(newest)

    def restore(self, parked: tuple[list[np.ndarray], dict[int, list[np.ndarray]]]) -> None:
        state, checkpoints = parked
        for live, kept in zip(self.sets[self.current], state, strict=True):
            live[...] = kept
        self.previous_at = self.pair_at = self.pair = None
        self.checkpoints = dict(checkpoints)
