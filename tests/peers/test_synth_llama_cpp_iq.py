"""llama.cpp reads the synthetic codebook-type GGUFs (IQ2_*, IQ3_*, MXFP4) as gguf-py does.

The fast path is proven against gguf-py's `dequantize` (tests/engine/gguf/test_repack*.py); this
checks the other side: the random blocks `bench.synth.blocks` writes are ones llama.cpp
decodes to the same weights, so the synthetic IQ/MXFP4 files are fair benchmark inputs. Loose
tolerance as in test_synth_llama_cpp (llama.cpp quantises activations); a layout or sign error
gives logits unrelated to the reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.synth.core import tiny_config, write_tiny_model
from tests.peers.test_synth_llama_cpp import _logits

pytestmark = pytest.mark.peer
CASES = [
    ("qwen3", "IQ2_XXS"),
    ("llama", "IQ2_XS"),
    ("qwen3", "IQ2_S"),
    ("llama", "IQ3_XXS"),
    ("qwen3", "IQ3_S"),
    ("llama", "MXFP4"),
]


@pytest.mark.parametrize(("arch", "quant"), CASES)
def test_llama_cpp_matches_reference_on_codebook_files(
    arch: str, quant: str, tmp_path: Path
) -> None:
    config = tiny_config(arch, hidden_size=256, intermediate_size=512)  # rows of 256-blocks
    reference = write_tiny_model(tmp_path / "m.gguf", arch, quant, config)
    actual, expected = _logits(tmp_path / "m.gguf", reference)
    assert np.abs(actual - expected).mean() < 0.1 * expected.std()
