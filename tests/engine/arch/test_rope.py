"""The fast path's rotary tables against transformers' own rope initialisers.

The short-context parity tests cannot reach Phi-3's long factors (used beyond the trained
context) or show the llama3 frequencies at every position, so these compare the tables
themselves: HParams read back from a GGUF written by `bench.synth.core`, against
`transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS` on the same config.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.synth.core import write_tiny_model
from engine.arch.hparams import read_hparams, rope_tables


def _hparams(path: Path, arch: str) -> tuple[object, object]:
    import gguf

    model = write_tiny_model(path, arch, "Q8_0")
    return read_hparams(gguf.GGUFReader(str(path))), model.config


def _transformers_tables(config: object, window: int) -> tuple[np.ndarray, np.ndarray]:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope_type = config.rope_parameters["rope_type"]  # type: ignore[attr-defined]
    inv_freq, factor = ROPE_INIT_FUNCTIONS[rope_type](config, torch.device("cpu"), seq_len=window)
    angles = torch.arange(window, dtype=torch.float64)[:, None] * inv_freq.double()[None, :]
    return (angles.cos() * factor).numpy(), (angles.sin() * factor).numpy()


@pytest.mark.parametrize(
    ("arch", "window"),
    [("phi3", 8192), ("phi3", 1024), ("llama", 4096)],
    ids=["phi3-long-factors", "phi3-short-factors", "llama3-scaling"],
)
def test_rope_tables_match_transformers(tmp_path: Path, arch: str, window: int) -> None:
    hp, config = _hparams(tmp_path / f"{arch}.gguf", arch)
    cos, sin = rope_tables(hp, window)  # type: ignore[arg-type]
    want_cos, want_sin = _transformers_tables(config, window)
    assert cos.shape == want_cos.shape
    # float32 inverse frequencies in transformers: ~1e-7 relative, times positions up to 8k.
    np.testing.assert_allclose(cos, want_cos, atol=2e-3)
    np.testing.assert_allclose(sin, want_sin, atol=2e-3)


def test_long_and_short_phi3_factors_differ(tmp_path: Path) -> None:
    """The check above could pass with one set of factors only if both sets were equal."""
    hp, _ = _hparams(tmp_path / "phi3.gguf", "phi3")
    assert hp.rope_factors and hp.rope_factors_long  # type: ignore[attr-defined]
    short, _ = rope_tables(hp, 1024)  # type: ignore[arg-type]
    long_, _ = rope_tables(hp, 8192)  # type: ignore[arg-type]
    assert not np.allclose(short, long_[:1024], atol=1e-3)


def test_what_the_graph_cannot_run_is_refused_by_name(tmp_path: Path) -> None:
    """Reading never refuses (the torch path needs the true values); check_fast_path does."""
    from dataclasses import replace

    from engine.arch.hparams import check_fast_path
    from engine.errors import UnsupportedModelError

    hp, _ = _hparams(tmp_path / "phi3.gguf", "phi3")
    check_fast_path(hp)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedModelError, match="rotate 24 of 64"):
        check_fast_path(replace(hp, rope_dim=24))  # type: ignore[type-var]
    with pytest.raises(UnsupportedModelError, match="dynamic"):
        check_fast_path(replace(hp, rope_scaling="dynamic"))  # type: ignore[type-var]
