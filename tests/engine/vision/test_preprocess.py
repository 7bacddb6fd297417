"""Image token counts and sizes are libmtmd's (counts observed from llama-cpp-python 0.3.36)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import InvalidParamsError
from engine.vision.preprocess import normalise, smart_size, token_limits
from engine.vision.projectors import PROJECTORS

G4, QW = PROJECTORS["gemma4v"], PROJECTORS["qwen3vl_merger"]


def _tokens(projector_align: int, merge: int, h: int, w: int, lo: int, hi: int) -> int:
    area = projector_align * projector_align
    th, tw = smart_size(h, w, projector_align, lo * area, hi * area)
    return (th // projector_align) * (tw // projector_align)


@pytest.mark.parametrize(
    ("h", "w", "budget", "tokens"),
    [
        (100, 150, None, 77), (1000, 1500, None, 651), (3000, 4500, None, 1080),
        (30, 40, None, 80), (2, 2, None, 81), (8000, 100, None, 334),
        (1000, 1500, 70, 60), (1000, 1500, 140, 126), (1000, 1500, 280, 260),
        (672, 1056, None, 308), (700, 1100, None, 345),
    ],
)  # fmt: skip
def test_gemma4_token_counts_are_libmtmds(h: int, w: int, budget: int | None, tokens: int) -> None:
    lo, hi = token_limits(G4, budget)
    assert _tokens(48, 3, h, w, lo, hi) == tokens


@pytest.mark.parametrize(
    ("h", "w", "budget", "tokens"),
    [(100, 150, None, 15), (3000, 4500, None, 4056), (1000, 1500, 256, 247),
     (30, 40, None, 12), (2, 2, None, 9), (8000, 100, None, 750)],
)  # fmt: skip
def test_qwen_token_counts_are_libmtmds(h: int, w: int, budget: int | None, tokens: int) -> None:
    lo, hi = token_limits(QW, budget)
    assert _tokens(32, 2, h, w, lo, hi) == tokens


def test_budgets_are_checked() -> None:
    assert token_limits(G4, 280) == (70, 280)
    with pytest.raises(InvalidParamsError, match="one of 70, 140, 280, 560, 1120"):
        token_limits(G4, 300)
    with pytest.raises(InvalidParamsError, match="fixed size"):
        token_limits(PROJECTORS["gemma3"], 256)


def test_normalise_is_libmtmds_float32_formula() -> None:
    px = np.array([[[0, 128, 255]]], np.uint8)
    out = normalise(px, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    assert out.dtype == np.float32
    assert np.allclose(out, [[[-1.0, 128 / 255 * 2 - 1, 1.0]]], atol=1e-7)
