"""Hearth's image encoders give libmtmd's rows: the same token count and embeddings.

The reference rows were made by llama.cpp's libmtmd (llama-cpp-python 0.3.36) on the tiny
random-weight mmprojs of `bench.synth.mmproj` and pinned in mtmd_reference.npz; refresh them with
``python -m bench.vision_reference`` after changing the writer or the cases. The ``peer`` test
re-derives one case from libmtmd live.

Tolerances: F16 files agree to ~1e-3 (float32 summation order); BF16 to ~1e-2; Q8_0 within
~2e-2 on gemma4v/qwen3vl (exact on gemma3: the source of the rest is not found yet, see
docs/vision.md). A layout or semantics error moves rows by 0.2 to 2 (values are ~2 at most).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bench.vision_reference import CASES, FIXTURE, synthetic_image
from engine.vision.encoders import encode
from engine.vision.mmproj import Mmproj, open_mmproj
from engine.vision.ort_tower import encode_fast, tower_for
from engine.vision.preprocess import Prepared, prepare

TOLERANCE = {"F16": 4e-3, "BF16": 2e-2, "Q8_0": 6e-2}
REFERENCE = np.load(FIXTURE)


def _ort(mm: Mmproj, image: Prepared) -> np.ndarray:
    tower = tower_for(mm)
    assert tower is not None  # onnxruntime is a dependency; these files are F16/BF16/Q8_0
    return encode_fast(tower, image)


ENCODERS = {"numpy": encode, "ort": _ort}


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
@pytest.mark.parametrize(
    ("name", "key", "mtype", "size", "budget"), CASES, ids=[c[0] for c in CASES]
)
def test_encoder_matches_pinned_libmtmd_rows(
    tiny_mmproj: Callable[[str, str], Path],
    encoder: str,
    name: str,
    key: str,
    mtype: str,
    size: tuple[int, int],
    budget: int | None,
) -> None:
    mm = open_mmproj(tiny_mmproj(key, mtype))
    image = prepare(synthetic_image(*size), mm.params, mm.projector, budget)
    expected = REFERENCE[name]
    assert image.n_tokens == expected.shape[0]  # libmtmd's token count
    rows = ENCODERS[encoder](mm, image)
    assert rows.shape == expected.shape
    assert np.abs(rows - expected).max() < TOLERANCE[mtype]


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
def test_a_wrong_layout_is_far_outside_the_tolerance(
    tiny_mmproj: Callable[[str, str], Path], encoder: str
) -> None:
    """The tolerance can fail: the same file with rows and columns of the image swapped."""
    mm = open_mmproj(tiny_mmproj("qwen3vl", "F16"))
    image = prepare(synthetic_image(128, 200).transpose(1, 0, 2).copy(), mm.params, mm.projector)
    expected = REFERENCE["qwen3vl-F16"]
    rows = ENCODERS[encoder](mm, image)
    assert rows.shape != expected.shape or np.abs(rows - expected).max() > 0.1


@pytest.mark.peer
def test_libmtmd_live_matches(tiny_mmproj: Callable[[str, str], Path], tmp_path: Path) -> None:
    from bench.synth.core import write_tiny_model
    from bench.vision_mtmd import mtmd_encode

    text = tmp_path / "text.gguf"
    write_tiny_model(text, "llama", "F32")  # 128 wide, as the tiny projectors
    path = tiny_mmproj("gemma4v", "F16")
    rgb = synthetic_image(90, 160)
    ref = mtmd_encode(path, text, rgb)
    mm = open_mmproj(path)
    image = prepare(rgb, mm.params, mm.projector)
    assert image.n_tokens == ref.n_tokens
    assert np.abs(encode(mm, image) - ref.embeddings).max() < TOLERANCE["F16"]
