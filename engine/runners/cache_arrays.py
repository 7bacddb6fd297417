"""An `engine.runners.onnx_runner.OnnxRunner` snapshot as plain arrays and back.

Owns the layout of the arrays a saved cache holds (`engine.runners.kv_store.SavedState`): the
K/V buffers first (only the reusable prefix of an attention-only cache: the rest would be
redone anyway), then, for a hybrid, the live recurrent state and each checkpoint's; and the
checks that a saved cache fits a model before it replaces the live one. Does not own the files
(`engine.runners.kv_store`), the snapshot itself or restoring it (the runner's ``snapshot`` /
``restore``), or the recurrent state (`engine.runners.recurrent`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.runners.kv_store import SavedState
from engine.runners.recurrent import RecurrentState

# A parked cache: K/V buffers (cached tokens only), ids, recurrent (state, checkpoints) or
# None, the reusable length.
Snapshot = tuple[list[np.ndarray], list[int], Any, int]


def export_snapshot(snapshot: Snapshot) -> SavedState:
    """``snapshot`` (a private copy) as plain arrays, for `engine.runners.kv_store`."""
    buffers, ids, states, reusable = snapshot
    if states is None:  # only the reusable prefix is worth a file (see reusable_length)
        buffers, ids = [b[:, :, :reusable] for b in buffers], ids[:reusable]
    arrays = list(buffers)
    layout: dict[str, Any] = {"kv": len(buffers), "reusable": reusable}
    if states is not None:
        state, checkpoints = states
        arrays += state
        layout["state"] = len(state)
        layout["checkpoints"] = list(checkpoints)
        for position in checkpoints:
            arrays += checkpoints[position]
    return SavedState(ids, arrays, layout)


def import_snapshot(
    saved: SavedState,
    buffers: list[np.ndarray],
    recurrent: RecurrentState | None,
    context_window: int,
) -> Snapshot:
    """``saved`` (from `export_snapshot`, maybe of an earlier process) as a snapshot for a
    runner with these live K/V ``buffers``, ``recurrent`` state and context window.

    Raises ValueError when its arrays do not fit this model."""
    n, arrays, layout = len(saved.ids), saved.arrays, saved.layout
    kv = int(layout.get("kv", -1))
    expected = [(1, b.shape[1], n, b.shape[3]) for b in buffers]
    if kv != len(expected) or [a.shape for a in arrays[:kv]] != expected:
        raise ValueError("the saved K/V do not fit this model")
    states: Any = None
    if recurrent is not None:
        width = len(recurrent.sets[0])
        positions = [int(p) for p in layout.get("checkpoints", [])]
        shapes = [b.shape for b in recurrent.sets[0]] * (1 + len(positions))
        if layout.get("state") != width or [a.shape for a in arrays[kv:]] != shapes:
            raise ValueError("the saved recurrent state does not fit this model")
        chunks = [arrays[kv + width * i : kv + width * (i + 1)] for i in range(len(positions) + 1)]
        states = (chunks[0], dict(zip(positions, chunks[1:], strict=True)))
    elif len(arrays) != kv:
        raise ValueError("the saved cache holds a recurrent state this model has not")
    if n > context_window:
        raise ValueError("the saved cache is longer than the context window")
    reusable = min(int(layout.get("reusable", 0)), n)
    return arrays[:kv], list(saved.ids), states, reusable
