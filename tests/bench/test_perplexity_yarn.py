"""gpt-oss's perplexity against llama.cpp: the one rope difference between them, measured apart.

llama.cpp rounds YaRN's correction range outward for every model; gpt-oss's own code,
transformers and the engine keep it unrounded (`engine.arch.yarn`). On random weights that
difference alone moved a 6-layer gpt-oss file's perplexity by -2.57 % against llama.cpp, which
read as an engine error. On an all-F32 file (no activation rounding on either side) the engine
rotating as llama.cpp does must land on llama.cpp's figure, and `bench perplexity --compare`
prints that figure beside the plain one (`bench.perplexity_llama.llama_cpp_yarn`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench.synth.moe import tiny_moe_config, write_moe_model

TEXT = Path(__file__).resolve().parents[1] / "data" / "perplexity.txt"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_gpt_oss_keeps_its_unrounded_yarn_range() -> None:
    """gpt-oss-20b's keys (head 64, base 150000, factor 32, original context 4096): the range
    of OpenAI's reference code, 8.09..17.40 (llama.cpp: 8..18); other YaRN files round."""
    import math
    from types import SimpleNamespace

    import numpy as np

    from engine.arch.yarn import yarn_frequencies

    keys = {"yarn_factor": 32.0, "rope_orig_context": 4096, "rope_attn_factor": 1.0}
    keys.update(yarn_beta_fast=32.0, yarn_beta_slow=1.0)
    hp = SimpleNamespace(**keys, yarn_truncate=False)  # the fields yarn_frequencies reads
    base, dim = 150000.0, 64
    low = dim / 2 * math.log(4096 / (32 * 2 * math.pi)) / math.log(base)
    high = dim / 2 * math.log(4096 / (2 * math.pi)) / math.log(base)
    assert (round(low, 2), round(high, 2)) == (8.09, 17.4)
    extrapolation = 1.0 / base ** (np.arange(dim // 2) * 2 / dim)
    keep = 1.0 - np.clip((np.arange(dim // 2) - low) / (high - low), 0.0, 1.0)
    expected = extrapolation / 32.0 * (1.0 - keep) + extrapolation * keep
    inv, mscale = yarn_frequencies(hp, base, dim)
    np.testing.assert_allclose(inv, expected, rtol=1e-12)
    assert mscale == pytest.approx(0.1 * math.log(32.0) + 1.0)
    rounded, _ = yarn_frequencies(SimpleNamespace(**keys, yarn_truncate=True), base, dim)
    ramp = np.clip((np.arange(dim // 2) - 8) / (18 - 8), 0.0, 1.0)
    np.testing.assert_allclose(rounded, extrapolation / 32.0 * ramp + extrapolation * (1 - ramp))


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="no llama-cpp-python")
def test_engine_rotating_as_llama_cpp_meets_its_perplexity(cache_dir: Path) -> None:
    from bench.perplexity_llama import compare_one

    path = cache_dir / "gpt-oss-f32.gguf"
    config = tiny_moe_config("gpt-oss", sliding_window=128)
    write_moe_model(path, "gpt-oss", "F32", config=config, reference=False)
    row = compare_one("tiny gpt-oss F32", path, TEXT.read_text(encoding="utf-8"))
    assert "error" not in row and row["tokens"] > 250, row
    # llama.cpp's F16 KV cache is the only rounding left (measured: ~0.01 %)
    assert abs(row["relative_difference_llama_yarn"]) < 0.002, row
    # the rope difference itself, an order of magnitude larger
    assert abs(row["relative_difference"]) > 5 * abs(row["relative_difference_llama_yarn"]), row
