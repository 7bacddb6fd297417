"""Image embeddings on the fast path: the language model's side of image input (issue 31).

Parity: a tiny random-weight gemma3, gemma4 and qwen35 file (llama.cpp's layout) run
text, 12 image rows, text; the logits of the text after the image match llama.cpp fed the same
rows (`tests.engine.support.image_parity`, its pinned fixture) within llama.cpp's F16 KV-cache
error, and 16 greedy ids are identical. Gemma's image tokens see each other both ways, Qwen3.5's
take M-RoPE positions: a runner that ran them causally / with plain positions fails this.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.runners.image_rows import ImageEmbedding, image_ids, image_key, segments, split_id
from tests.engine.support import image_parity
from tests.engine.support.fast_runner import build_fast_runner

ATOL = 8e-3  # llama.cpp keeps K/V in F16 (its text parity checks allow the same)


def _runner(family: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{family}.gguf"
    image_parity.write_model(family, path)
    runner = build_fast_runner(path, accuracy=0, window=256)
    assert runner is not None
    return runner


@pytest.mark.parametrize("family", image_parity.FAMILIES)
def test_logits_after_an_image_match_llama_cpp(family: str, tmp_path: Path) -> None:
    fixture = np.load(image_parity.FIXTURE)
    runner = _runner(family, tmp_path)
    width = runner.hparams.hidden + runner.deepstack_width  # Qwen3-VL: its deepstack rows too
    image = ImageEmbedding(image_key("ab" * 32), image_parity.image_rows(width), image_parity.GRID)
    runner.add_image(image)
    ids = image_parity.BEFORE + image.ids + image_parity.AFTER
    logits = runner.extend(ids)[-len(image_parity.AFTER) :]
    got = logits[:, fixture[f"{family}_columns"]]
    assert np.abs(got - fixture[f"{family}_logits"]).max() < ATOL
    assert logits.argmax(axis=1).tolist() == fixture[f"{family}_argmax"].tolist()
    greedy, last = [], logits[-1]
    for _ in range(image_parity.N_GREEDY):
        greedy.append(int(last.argmax()))
        last = runner.extend([greedy[-1]])[-1]
    assert greedy == fixture[f"{family}_greedy"].tolist()


def test_an_image_in_chunks_equals_one_run_and_reuse_keeps_it(tmp_path: Path) -> None:
    """A prompt run in one call equals the same prompt run as prefix, then the rest; a cropped
    cache re-run after the image gives the same logits (the image's rows stay known)."""
    runner = _runner("gemma3", tmp_path)
    image = ImageEmbedding(7, image_parity.image_rows(runner.hparams.hidden), image_parity.GRID)
    runner.add_image(image)
    ids = image_parity.BEFORE + image.ids + image_parity.AFTER
    whole = runner.extend(ids, last_only=True)[-1]
    runner.crop(len(image_parity.BEFORE) + len(image.ids))
    again = runner.extend(image_parity.AFTER, last_only=True)[-1]
    np.testing.assert_allclose(again, whole, atol=1e-4)
    runner.reset()
    runner.extend(image_parity.BEFORE)
    split = runner.extend(image.ids + image_parity.AFTER, last_only=True)[-1]
    np.testing.assert_allclose(split, whole, atol=1e-4)


def test_another_image_changes_the_reply(tmp_path: Path) -> None:
    runner = _runner("qwen35", tmp_path)
    rows = image_parity.image_rows(runner.hparams.hidden)
    first, second = ImageEmbedding(1, rows, (3, 4)), ImageEmbedding(2, rows[::-1].copy(), (3, 4))
    for image in (first, second):
        runner.add_image(image)
    a = runner.extend(image_parity.BEFORE + first.ids + image_parity.AFTER, last_only=True)
    runner.reset()
    b = runner.extend(image_parity.BEFORE + second.ids + image_parity.AFTER, last_only=True)
    assert np.abs(a - b).max() > 1e-2


def test_rows_of_the_wrong_width_are_refused(tmp_path: Path) -> None:
    runner = _runner("gemma3", tmp_path)
    wide = np.zeros((12, runner.hparams.hidden + 1), np.float32)
    with pytest.raises(ValueError, match="wide"):
        runner.add_image(ImageEmbedding(3, wide, (3, 4)))


def test_image_ids_and_segments() -> None:
    key = image_key("00" * 32, "mmproj:budget")
    ids = image_ids(key, 3)
    assert all(i < 0 for i in ids) and [split_id(i) for i in ids] == [(key, k) for k in range(3)]
    other = image_ids(key + 1, 2)
    assert segments([5, 6, *ids, *other, 9]) == [
        (0, 2, False), (2, 5, True), (5, 7, True), (7, 8, False)
    ]  # fmt: skip
    assert image_key("00" * 32, "a") != image_key("00" * 32, "b")


def test_batched_decoding_of_a_gemma_graph_binds_its_image_inputs(tmp_path: Path) -> None:
    """The server's batch runs the same graph: its text runs bind the image block's inputs."""
    from engine.runners.batched import BatchedDecoder

    runner = _runner("gemma3", tmp_path)
    alone = runner.extend(image_parity.BEFORE, last_only=True)[-1]
    batch = BatchedDecoder(runner, 2)
    together = np.asarray(batch.prefill(0, image_parity.BEFORE)).reshape(-1)[-alone.size :]
    np.testing.assert_allclose(together, alone, atol=1e-4)
    assert batch.decode([5, None]).shape[0] == 2


def test_a_gemma_image_at_the_end_of_the_window(tmp_path: Path) -> None:
    """An image run at the window's end (its tokens fill the cache up to the window) runs, and
    as in a larger window."""
    path = tmp_path / "gemma3.gguf"
    image_parity.write_model("gemma3", path)
    rows = image_parity.image_rows(_runner("gemma3", tmp_path).hparams.hidden)
    image = ImageEmbedding(5, rows, image_parity.GRID)
    outs = []
    for window in (64, 256):
        runner = build_fast_runner(path, accuracy=0, window=window)
        assert runner is not None
        runner.add_image(image)
        outs.append(runner.extend(list(range(1, 51)) + image.ids, last_only=True))
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-4)


def test_qwen35_cut_inside_an_image_and_replayed_gives_the_same_logits(tmp_path: Path) -> None:
    """A hybrid model's crop replays from a saved state, which may lie inside an image (its
    M-RoPE positions must continue where the cut left them)."""
    runner = _runner("qwen35", tmp_path)
    rows = np.concatenate([image_parity.image_rows(runner.hparams.hidden)] * 4)  # 48 tokens
    image = ImageEmbedding(9, rows, (6, 8))
    runner.add_image(image)
    ids = image_parity.BEFORE + image.ids + image_parity.AFTER
    whole = runner.extend(ids, last_only=True)[-1]
    runner.reset()
    cut = len(image_parity.BEFORE) + 20
    runner.extend(ids[:cut], last_only=True)
    runner.extend(ids[cut:], last_only=True)
    runner.crop(cut + 10)  # back inside the image: replayed from a state at or before it
    again = runner.extend(ids[cut + 10 :], last_only=True)[-1]
    np.testing.assert_allclose(again, whole, atol=1e-3)


@pytest.mark.parametrize("family", ["gemma3", "gemma4"])
def test_gemma_image_tokens_see_later_image_tokens_and_text_stays_causal(
    family: str, tmp_path: Path
) -> None:
    """Gemma's image run attends both ways: changing the image's last row changes the cached
    K/V of its first token from the second layer on (a causal run would leave them alone),
    while the text before the image, and layer 0 (K/V from each token's own row), do not
    move. The parity test checks the values against llama.cpp; this one checks the mask."""
    runner = _runner(family, tmp_path)
    rows = image_parity.image_rows(runner.hparams.hidden)
    changed = rows.copy()
    changed[-1] *= -3.0
    caches = []
    for key, image_rows in ((11, rows), (12, changed)):
        image = ImageEmbedding(key, image_rows, image_parity.GRID)
        runner.add_image(image)
        runner.reset()
        runner.extend(image_parity.BEFORE + image.ids, last_only=True)
        buffers = runner.snapshot()[0]  # type: ignore[index]
        caches.append([np.array(b[0]) for b in buffers])  # per buffer: (kv_heads, n, dim)
    first = len(image_parity.BEFORE)  # the image's first token
    a, b = caches
    np.testing.assert_array_equal(a[0][:, first], b[0][:, first])  # layer 0's key
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x[:, :first], y[:, :first])  # the text before
    later = zip(a[2:], b[2:], strict=True)  # layer 1 on
    moved = [float(np.abs(x[:, first] - y[:, first]).max()) for x, y in later]
    assert max(moved) > 1e-3, moved
