"""Qwen3-VL's language models (GGUF arch qwen3vl, qwen3vlmoe) on the fast path.

Text: a Qwen3-VL file is qwen3's (qwen3moe's) tensors under another name, so its logits must
match transformers' qwen3 twin of the same weights (`tests.engine.support.parity`). Images with
deepstack rows are checked against llama.cpp in `test_image_input` (the pinned fixture) and
against libmtmd end to end in `tests/engine/loop/test_images.py`. Here: what a deepstack row
does (only image tokens, only after the first layers), and the server's batch binding it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.synth.qwen3vl import write_tiny_qwen3vl
from engine.runners.image_rows import ImageEmbedding
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import assert_matches_reference


@pytest.mark.parametrize("moe", [False, True], ids=["qwen3vl", "qwen3vlmoe"])
def test_text_matches_the_qwen3_twin(tmp_path: Path, moe: bool) -> None:
    path = tmp_path / "m.gguf"
    reference = write_tiny_qwen3vl(path, "F32", moe=moe)
    runner = build_fast_runner(path, accuracy=0, window=512)
    assert runner is not None and runner.hparams.arch == ("qwen3vlmoe" if moe else "qwen3vl")
    assert runner.deepstack_width == 2 * runner.hparams.hidden
    assert_matches_reference(runner, reference)


def test_deepstack_rows_reach_only_image_tokens_and_their_layers(tmp_path: Path) -> None:
    """Zero deepstack rows give the embedding rows' logits; non-zero ones change them. A file
    declaring no deepstack layers takes rows of the embedding's width only."""
    path = tmp_path / "m.gguf"
    write_tiny_qwen3vl(path, "F32", deepstack=2)
    runner = build_fast_runner(path, accuracy=0, window=256)
    assert runner is not None
    hidden = runner.hparams.hidden
    rng = np.random.default_rng(4)
    main = (rng.standard_normal((12, hidden)) * 0.5).astype(np.float32)
    extra = (rng.standard_normal((12, 2 * hidden)) * 0.5).astype(np.float32)
    plain = ImageEmbedding(1, np.concatenate([main, np.zeros_like(extra)], axis=1), (3, 4))
    deep = ImageEmbedding(2, np.concatenate([main, extra], axis=1), (3, 4))
    text = [5, 17, 230, 99]
    outs = []
    for image in (plain, deep):
        runner.reset()
        runner.add_image(image)
        outs.append(runner.extend([*text, *image.ids, 7, 811], last_only=True)[-1])
    assert np.abs(outs[0] - outs[1]).max() > 1e-3  # the deepstack rows were added

    none = tmp_path / "none.gguf"
    write_tiny_qwen3vl(none, "F32", deepstack=0)
    flat = build_fast_runner(none, accuracy=0, window=256)
    assert flat is not None and flat.deepstack_width == 0
    flat.add_image(ImageEmbedding(1, main, (3, 4)))
    with pytest.raises(ValueError, match="wide"):
        flat.add_image(ImageEmbedding(2, deep.rows, (3, 4)))
    same = flat.extend([*text, *plain.ids, 7, 811], last_only=True)[-1]
    np.testing.assert_allclose(same, outs[0], atol=1e-4)  # zero rows: as if none


def test_the_servers_batch_binds_zero_deepstack_rows(tmp_path: Path) -> None:
    from engine.runners.batched import BatchedDecoder

    path = tmp_path / "m.gguf"
    write_tiny_qwen3vl(path, "F32")
    runner = build_fast_runner(path, accuracy=0, window=256)
    assert runner is not None
    prompt = [1, 17, 230, 99, 12]
    alone = runner.extend(prompt, last_only=True)[-1]
    batch = BatchedDecoder(runner, 2)
    together = np.asarray(batch.prefill(0, prompt)).reshape(-1)[-alone.size :]
    np.testing.assert_allclose(together, alone, atol=1e-4)
    assert batch.decode([5, None]).shape[0] == 2
