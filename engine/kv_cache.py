"""Prefix reuse over a Runner's KV cache, and the per-conversation cache store.

Owns two small things: `reuse_prefix` (keep the longest common prefix of what is cached and
the new prompt; crop the rest) and `ConversationCaches` (an LRU of parked caches keyed by
conversation id, so switching between chats does not re-prefill each one; with a
`engine.runners.kv_store.KVStore`, a left conversation is also written to disk and one found
nowhere in memory is read back from there, so chats resume after a restart). Does not own the
tensors: a Runner's ``snapshot``/``restore`` (and ``export_state``/``import_state``) do (see
`engine.runners.base`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from engine.runners.base import Runner, SnapshotRunner
from engine.runners.image_rows import split_id
from engine.runners.kv_store import KVStore, PersistentRunner


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def reuse_prefix(runner: Runner, prompt_ids: Sequence[int]) -> int:
    """Crop the runner's cache to its longest common prefix with ``prompt_ids``; return its length.

    Always leaves at least one prompt token uncached, because the loop needs the logits of the
    last prompt token and only a forward pass produces them. A runner with a
    ``reusable_length`` (the fast path: see `OnnxRunner.reusable_length`) keeps at most that
    many, and leaves two uncached, so the prompt's logits come from a run of >= 2 tokens just
    as in a cold prefill: the same prompt gives the same reply, cached or not.
    """
    if not prompt_ids:
        return 0
    keep = min(common_prefix_length(runner.cached_ids, prompt_ids), len(prompt_ids) - 1)
    reusable = getattr(runner, "reusable_length", None)
    if isinstance(reusable, int):
        keep = max(0, min(keep, reusable, len(prompt_ids) - 2))
    if 0 < keep < len(prompt_ids) and prompt_ids[keep] < 0:  # never inside an image
        keep -= split_id(prompt_ids[keep])[1]
    if keep < len(runner.cached_ids):
        runner.crop(keep)
    return keep


def settle(runner: Runner) -> int:
    """Re-run the cache's decoded tail as prefill runs, so the next turn can reuse it.

    A reply is decoded one token per run. Where such a run rounds apart from a prefill (a
    hybrid's DeltaNet step on ONNX ops: `OnnxRunner.exact_steps`) its K/V are not reused (see
    `reuse_prefix`), so the next message would prefill the reply again. Done right after the
    reply, while the user reads, it costs the next turn nothing; the numbers are a cold
    prefill's. Elsewhere the decoded K/V are already reusable and nothing runs. Returns how
    many tokens ran (0 for a runner without ``reusable_length``)."""
    reusable = getattr(runner, "reusable_length", None)
    ids = runner.cached_ids
    if not isinstance(reusable, int) or reusable >= len(ids):
        return 0
    start = max(0, min(reusable, len(ids) - 2))  # a run of >= 2 tokens
    runner.crop(start)
    tail = ids[start:]
    for i in range(0, len(tail), SETTLE_CHUNK):
        chunk = tail[i : i + SETTLE_CHUNK]
        if len(chunk) == 1:  # never a 1-token run: redo the previous token with it
            runner.crop(start + i - 1)
            chunk = tail[i - 1 : i + 1]
        runner.extend(chunk, last_only=True)
    return len(tail)


SETTLE_CHUNK = 512


class ConversationCaches:
    """Parked KV caches of recent conversations (LRU, at most ``capacity``).

    Memory: each parked cache holds K and V for every cached token of its conversation, in
    the runner's type — for SmolLM2-135M, 30 layers x 2 x 3 KV heads x 64 dims x 2 B (float16,
    the kernel's attention) = 23 KB per token, so 4 parked 2k-token conversations take
    ~185 MB (twice that in float32). The live cache stays in the Runner.
    """

    def __init__(self, capacity: int = 4, store: KVStore | None = None) -> None:
        self.capacity = capacity
        self.store = store
        self._parked: OrderedDict[str, object] = OrderedDict()
        self.current: str | None = None  # conversation whose tokens are in the runner now
        self.restored = 0  # tokens the last switch_to read back from the store (0: none)
        self._saved: tuple[str, int] | None = None  # (conversation, hash of ids) last written

    def switch_to(self, runner: Runner, conversation_id: str | None) -> None:
        """Make ``conversation_id``'s cache live in ``runner`` (parking the current one)."""
        self.restored = 0
        if conversation_id == self.current or not isinstance(runner, SnapshotRunner):
            self.current = conversation_id
            return
        if self.current is not None and runner.cached_ids:
            self.save_current(runner)
            if self.capacity > 0:
                self._parked[self.current] = runner.snapshot()
                self._parked.move_to_end(self.current)
                while len(self._parked) > self.capacity:
                    self._parked.popitem(last=False)
        state = self._parked.pop(conversation_id, None) if conversation_id else None
        if state is not None:
            runner.restore(state)
        elif conversation_id and self._restore_saved(runner, conversation_id):
            self.restored = len(runner.cached_ids)
        # Without a parked state the runner keeps what it has: LCP reuse still helps when the
        # new conversation shares the system prompt with the previous one.
        self.current = conversation_id

    def save_current(self, runner: Runner) -> None:
        """Write the live conversation's cache to the store (leaving a chat, quitting)."""
        if self.store is None or self.current is None or not runner.cached_ids:
            return
        written = (self.current, hash(tuple(runner.cached_ids)))
        if isinstance(runner, PersistentRunner) and written != self._saved:
            self.store.save(self.current, runner.export_state())
            self._saved = written  # a chat left twice unchanged is written once

    def _restore_saved(self, runner: Runner, conversation_id: str) -> bool:
        if self.store is None or not isinstance(runner, PersistentRunner):
            return False
        saved = self.store.load(conversation_id)
        if saved is None:
            return False
        try:
            runner.import_state(saved)
        except ValueError:  # the key matched but the arrays do not fit: never use it
            self.store.forget(conversation_id)
            return False
        self._saved = (conversation_id, hash(tuple(runner.cached_ids)))  # as on disk
        return True

    def clear(self) -> None:
        self._parked.clear()
        self.current = None
