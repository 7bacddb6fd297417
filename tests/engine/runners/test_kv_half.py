"""The K/V cache where the kernel's attention runs every layer: float16
(`engine.fastpath.attention_op.cache_half`): the runner's buffers, a batch's buffers and a saved
chat's arrays take the graph's type, each at half the bytes, and the model scores a text as it
does over a float32 cache (``HEARTH_KV_HALF=0``) up to float16's rounding of K and V. And
reserved for the whole window, mapped as written (`engine.runners.kv_binding.reserved_zeros`):
the buffers never grow (no copy stalls a step) and hold memory only for the rows written.

Real engine, bundled model; the op itself against GroupQueryAttention and against its float32
form: tests/engine/kernels/test_attention_op.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from engine.engine import Engine
from engine.kernels import native
from engine.models import bundled_gguf_path
from engine.runners.batched import BatchedDecoder
from engine.runners.kv_binding import reserved_zeros
from engine.runners.onnx_runner import OnnxRunner
from tests.engine.support.fast_runner import build_fast_runner

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native ops cannot serve here")

TEXT = Path(__file__).parents[2] / "data" / "perplexity.txt"


def _runner(monkeypatch: pytest.MonkeyPatch, half: bool) -> OnnxRunner:
    monkeypatch.setenv("HEARTH_KV_HALF", "1" if half else "0")  # read as the graph is chosen
    runner = build_fast_runner(bundled_gguf_path())
    assert runner is not None
    return runner


@pytest.fixture(scope="module")
def text_ids() -> list[int]:
    """The perplexity text's token ids (the bundled model's own tokenizer)."""
    engine = Engine("bundled")
    try:
        ids = engine.tokenize(TEXT.read_text(encoding="utf-8"))
    finally:
        engine.close()
    assert len(ids) >= 300
    return list(ids)


def test_buffers_batches_and_saved_chats_take_the_graphs_type(
    monkeypatch: pytest.MonkeyPatch, text_ids: list[int]
) -> None:
    half, full = _runner(monkeypatch, True), _runner(monkeypatch, False)
    assert half.kv_dtype == np.float16 and full.kv_dtype == np.float32
    ids = text_ids[:41]
    for runner in (half, full):
        runner.extend(ids)
        saved = runner.export_state()
        assert {a.dtype for a in saved.arrays} == {runner.kv_dtype}
    assert sum(a.nbytes for a in half.export_state().arrays) * 2 == sum(
        a.nbytes for a in full.export_state().arrays
    )
    batches = BatchedDecoder(half, slots=2), BatchedDecoder(full, slots=2)
    assert batches[0].bytes_per_token * 2 == batches[1].bytes_per_token
    for batch in batches:
        batch.prefill(0, ids[:8])
        assert {b.dtype for b in batch._buffers} == {batch.runner.kv_dtype}
    # a saved float16 chat reopened: the next step scores as the live cache's did
    saved = half.export_state()
    want = half.extend(ids[40:41])
    half.reset()
    half.import_state(saved)
    assert np.array_equal(half.extend(ids[40:41]), want)


def test_a_float16_cache_scores_a_text_as_the_float_cache_does(
    monkeypatch: pytest.MonkeyPatch, text_ids: list[int]
) -> None:
    """300 tokens of English, every position's logits: the float16 cache moves them by its
    rounding of K and V, far less than the logits' spread, and the next token agrees almost
    everywhere. (The int8 graph passes any rounding on: swapping GroupQueryAttention for the
    kernel's op over float32 moves them as much, a median 0.65 of a 6.6 spread at the
    position's largest change and 96 % agreement, as the float16 cache's 0.66 and 96 %.)"""
    half, full = _runner(monkeypatch, True), _runner(monkeypatch, False)
    ids = text_ids[:300]
    got, want = half.extend(ids), full.extend(ids)
    assert got.shape == want.shape == (300, half.vocab_size)
    spread = float(want.std())
    diff = np.abs(got - want).max(axis=-1)
    assert float(np.median(diff)) < 0.15 * spread, (float(np.median(diff)), spread)
    agree = float(np.mean(got.argmax(-1) == want.argmax(-1)))
    assert agree >= 0.92, agree
    assert not np.array_equal(got, want)  # the two caches really differ


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_reserved_buffer_holds_memory_only_for_the_rows_written() -> None:
    before = _resident_bytes()
    buf = reserved_zeros((1, 4, 262144, 128), np.float16)  # 256 MiB reserved
    assert buf is not None and buf.shape == (1, 4, 262144, 128) and not buf.any()
    reserved = _resident_bytes()
    buf[:, :, :2048] = 1.0  # 2,048 tokens of each head: 2 MiB in all
    written = _resident_bytes()
    assert reserved - before < 16 << 20, reserved - before  # nothing much yet
    assert written - reserved < 32 << 20, written - reserved  # the rows' pages, not 256 MiB
    assert float(buf[0, 3, 2047, 127]) == 1.0 and float(buf[0, 3, 2048, 0]) == 0.0


def test_a_kernel_attention_runner_reserves_its_window_and_never_regrows(
    monkeypatch: pytest.MonkeyPatch, text_ids: list[int]
) -> None:
    runner = _runner(monkeypatch, True)
    assert runner.kernel_attention
    assert runner.capacity == runner.context_window
    buffers = [id(b) for b in runner._buffers]
    runner.extend(text_ids[:300])  # past 256 tokens, where a doubling buffer grew
    assert runner.capacity == runner.context_window
    assert [id(b) for b in runner._buffers] == buffers
