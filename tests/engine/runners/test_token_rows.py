"""The fast path's token-embedding lookup (`engine.runners.token_rows`): the rows asked for,
dequantised as gguf-py does, in the order asked, and read without mapping the model file (a
mapping kept ~64 KB resident per distinct token; towards the whole table over a long chat)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from engine.fastpath.meta import EmbeddingSource
from engine.runners.token_rows import TokenRows

ROWS, COLS, OFFSET = 300, 256, 4096  # a table after a 4 KB "header"


def _table(path: Path, qtype: gguf.GGMLQuantizationType, seed: int) -> np.ndarray:
    """Write random blocks of ``qtype`` (valid float16 scales) at OFFSET; the raw rows."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    weights = np.random.default_rng(seed).normal(size=(ROWS, COLS)).astype(np.float32)
    raw = gguf.quants.quantize(weights, qtype).view(np.uint8).reshape(ROWS, COLS // block * size)
    path.write_bytes(b"\x07" * OFFSET + raw.tobytes() + b"\x09" * 100)
    return raw


@pytest.mark.parametrize("qtype", [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F16])
def test_rows_as_asked_equal_gguf_dequantize(
    tmp_path: Path, qtype: gguf.GGMLQuantizationType
) -> None:
    raw = _table(tmp_path / "m.gguf", qtype, seed=int(qtype))
    source = EmbeddingSource(offset=OFFSET, ggml_type=int(qtype), rows=ROWS, cols=COLS, scale=2.0)
    rows = TokenRows(tmp_path / "m.gguf", source)
    ids = [5, 299, 0, 5, 17, 5]  # repeats and out of order, as a prompt has them
    expected = gguf.quants.dequantize(raw[ids], qtype).reshape(len(ids), COLS) * 2.0
    got = rows.lookup(ids)
    assert got.dtype == np.float32 and got.shape == (len(ids), COLS)
    assert np.array_equal(got, expected.astype(np.float32))
    assert np.array_equal(rows.lookup([299]), got[1:2])
    rows.close()


def test_an_id_outside_the_table_is_refused(tmp_path: Path) -> None:
    _table(tmp_path / "m.gguf", gguf.GGMLQuantizationType.Q8_0, seed=1)
    source = EmbeddingSource(OFFSET, int(gguf.GGMLQuantizationType.Q8_0), ROWS, COLS)
    rows = TokenRows(tmp_path / "m.gguf", source)
    for bad in ([ROWS], [-1], [3, ROWS + 7]):
        with pytest.raises(IndexError, match="out of range"):
            rows.lookup(bad)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_the_model_file_is_never_mapped(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    _table(path, gguf.GGMLQuantizationType.Q8_0, seed=2)
    rows = TokenRows(path, EmbeddingSource(OFFSET, int(gguf.GGMLQuantizationType.Q8_0), ROWS, COLS))
    rows.lookup(list(range(0, ROWS, 3)))
    with open("/proc/self/maps", encoding="utf-8") as maps:
        assert str(path.resolve()) not in maps.read()


def test_without_positioned_reads_the_rows_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has no os.preadv: the rows are read after a seek instead."""
    raw = _table(tmp_path / "m.gguf", gguf.GGMLQuantizationType.Q8_0, seed=3)
    source = EmbeddingSource(OFFSET, int(gguf.GGMLQuantizationType.Q8_0), ROWS, COLS)
    monkeypatch.delattr(os, "preadv", raising=False)
    rows = TokenRows(tmp_path / "m.gguf", source)
    expected = gguf.quants.dequantize(raw[[9, 2, 9]], gguf.GGMLQuantizationType.Q8_0)
    assert np.array_equal(rows.lookup([9, 2, 9]), expected.reshape(3, COLS))
