"""The fast path's head in row slices (`engine.fastpath.head.HEAD_SLICE_BYTES`): ONNX Runtime
maps, prepacks and unmaps one MatMulNBits weight at a time, the head last, so a head in slices
keeps one slice's codes mapped at the open's peak instead of all of them. The logits must not
change: bit for bit those of the head in one piece, on the real engine and a tiny GGUF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.fastpath import head
from engine.gguf.repack import Packed


def _head_nodes(model: Path) -> list[str]:
    import onnx

    from engine.fastpath.cache import MODEL_FILE, graph_folder

    proto = onnx.load(graph_folder(model) / MODEL_FILE, load_external_data=False)
    nodes = [n for n in proto.graph.node if n.op_type == "MatMulNBits"]
    return [n.output[0] for n in nodes if n.output[0].startswith("head")]


def test_a_sliced_head_gives_the_same_logits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.engine.support.fast_runner import build_fast_runner
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    ids = [1, 5, 9, 2, 7, 3]
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "whole"))
    whole = build_fast_runner(model)
    assert whole is not None and len(_head_nodes(model)) == 1
    expected = np.asarray(whole.extend(ids)).copy()

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "sliced"))
    monkeypatch.setattr(head, "HEAD_SLICE_BYTES", 3000)  # a few uneven slices of the tiny head
    sliced = build_fast_runner(model)
    assert sliced is not None and len(_head_nodes(model)) >= 3
    got = np.asarray(sliced.extend(ids))
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_row_slices_cover_every_array_once() -> None:
    rng = np.random.default_rng(0)
    n, k, block = 1003, 64, 32
    w = Packed(
        n, k, 4, block,
        codes=rng.integers(0, 256, (n, k // block, block // 2), dtype=np.uint8),
        scales=rng.random((n, k // block), dtype=np.float32),
        offsets=rng.random((n, k // block), dtype=np.float32),
        dense=None, zero_point=0,
        zero_points=rng.integers(0, 256, (n, 1), dtype=np.uint8),
    )  # fmt: skip
    assert head.row_slices(w, w.codes.nbytes) == [w]  # small enough: itself
    limit = w.codes.nbytes // 4
    parts = head.row_slices(w, limit)
    assert len(parts) >= 4 and sum(p.n for p in parts) == n
    row = w.codes.nbytes // n  # slices start on MLAS's row tiles: up to an alignment over
    assert all(p.codes.nbytes <= limit + head.SLICE_ALIGN * row for p in parts)
    assert all(p.n % head.SLICE_ALIGN == 0 for p in parts[:-1])
    for name in ("codes", "scales", "offsets", "zero_points"):
        joined = np.concatenate([getattr(p, name) for p in parts])
        np.testing.assert_array_equal(joined, getattr(w, name))
    assert all(p.bits == 4 and p.k == k and p.zero_point == 0 for p in parts)
