"""The ORT tower's session layouts give the same rows: blocks grouped per session, shared arena.

`engine.vision.ort_tower.OrtTower` can run a tower's blocks one a session or several a session
(``group``), over per-session buffers or one arena shared by its sessions (``shared_arena``).
These are layouts of the same graph nodes, so the rows must equal the one-block-a-session
tower's, bit for bit, on five-layer tiny projectors of each type (group 2 leaves a one-block
remainder; the deepstack layers sit inside a group and at a group's end), on F16 and Q8_0.
The rows' agreement with libmtmd itself is `test_mtmd_parity.py`'s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.synth.mmproj import tiny_shape, write_mmproj
from bench.vision_reference import synthetic_image
from engine.vision.mmproj import open_mmproj
from engine.vision.ort_tower import OrtTower, encode_fast
from engine.vision.preprocess import prepare

SHAPES = {
    "gemma3": tiny_shape("gemma3", n_layer=5),
    "gemma4v": tiny_shape("gemma4v", n_layer=5),
    "qwen3vl-deepstack": tiny_shape("qwen3vl-deepstack", n_layer=5, deepstack=(2, 3)),
}
LAYOUTS = [(2, False), (3, True), (5, False), (1, True)]  # (blocks a session, shared arena)


@pytest.mark.parametrize("mtype", ["F16", "Q8_0"])
@pytest.mark.parametrize("key", sorted(SHAPES))
def test_grouped_sessions_give_the_one_block_rows(tmp_path: Path, key: str, mtype: str) -> None:
    path = tmp_path / f"{key}-{mtype}.gguf"
    write_mmproj(path, SHAPES[key], mtype)
    mm = open_mmproj(path)
    image = prepare(synthetic_image(100, 150), mm.params, mm.projector, None)
    expected = encode_fast(OrtTower(mm, 2, group=1, shared_arena=False), image)
    assert np.isfinite(expected).all()
    for group, arena in LAYOUTS:
        tower = OrtTower(mm, 2, group=group, shared_arena=arena)
        assert len(tower.blocks) == -(-5 // group)
        for _ in range(2):  # a second encode reuses the arena's buffers
            rows = encode_fast(tower, image)
            assert rows.shape == expected.shape
            np.testing.assert_array_equal(rows, expected, err_msg=f"group {group} arena {arena}")


def test_a_wrong_block_order_is_seen(tmp_path: Path) -> None:
    """The comparison can fail: sessions run out of order give other rows."""
    path = tmp_path / "gemma4v.gguf"
    write_mmproj(path, SHAPES["gemma4v"], "F16")
    mm = open_mmproj(path)
    image = prepare(synthetic_image(100, 150), mm.params, mm.projector, None)
    tower = OrtTower(mm, 2, group=2)
    expected = encode_fast(tower, image)
    tower.blocks.reverse()
    assert np.abs(encode_fast(tower, image) - expected).max() > 1e-2
