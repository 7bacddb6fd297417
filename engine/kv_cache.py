"""Prefix reuse over a Runner's KV cache, and the per-conversation cache store.

Owns two small things: `reuse_prefix` (keep the longest common prefix of what is cached and
the new prompt; crop the rest) and `ConversationCaches` (an LRU of parked caches keyed by
conversation id, so switching between chats does not re-prefill each one). Does not own the
tensors: a Runner's ``snapshot``/``restore`` do (see `engine.runners.base`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from engine.runners.base import Runner, SnapshotRunner


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
    last prompt token and only a forward pass produces them.
    """
    if not prompt_ids:
        return 0
    keep = min(common_prefix_length(runner.cached_ids, prompt_ids), len(prompt_ids) - 1)
    if keep < len(runner.cached_ids):
        runner.crop(keep)
    return keep


class ConversationCaches:
    """Parked KV caches of recent conversations (LRU, at most ``capacity``).

    Memory: each parked cache holds K and V for every cached token of its conversation —
    for SmolLM2-135M in float32, 30 layers x 2 x 3 KV heads x 64 dims x 4 B = 46 KB per token,
    so 4 parked 2k-token conversations take ~370 MB. The live cache stays in the Runner.
    """

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._parked: OrderedDict[str, object] = OrderedDict()
        self.current: str | None = None  # conversation whose tokens are in the runner now

    def switch_to(self, runner: Runner, conversation_id: str | None) -> None:
        """Make ``conversation_id``'s cache live in ``runner`` (parking the current one)."""
        if conversation_id == self.current or not isinstance(runner, SnapshotRunner):
            self.current = conversation_id
            return
        if self.current is not None and runner.cached_ids and self.capacity > 0:
            self._parked[self.current] = runner.snapshot()
            self._parked.move_to_end(self.current)
            while len(self._parked) > self.capacity:
                self._parked.popitem(last=False)
        state = self._parked.pop(conversation_id, None) if conversation_id else None
        if state is not None:
            runner.restore(state)
        # Without a parked state the runner keeps what it has: LCP reuse still helps when the
        # new conversation shares the system prompt with the previous one.
        self.current = conversation_id

    def clear(self) -> None:
        self._parked.clear()
        self.current = None
