"""The codebook quant types (IQ2_XXS/XS/S, IQ3_XXS/S, MXFP4) on the fast path.

Bit-for-bit equality with gguf-py for every type is in test_repack.py (it walks
`repack.SUPPORTED`); here: what ONNX Runtime reads from the new layouts, the edges of MXFP4's
exponent, why the codebooks need 8-bit codes, the memory estimate, and tiny llama/qwen3 models
in each new type (as llama-quantize mixes them) against transformers' float32 forward.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.synth.core import tiny_config, write_tiny_model
from engine.gguf import repack as rp
from tests.engine.gguf.test_repack import K, N, qtype, random_raw, reference, run_matmulnbits
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW, assert_matches_reference, reference_logits

gguf = pytest.importorskip("gguf")

CODEBOOK = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "MXFP4"]


@pytest.mark.parametrize("kind", CODEBOOK)
def test_onnxruntime_reads_the_codebook_layouts(kind: str) -> None:
    raw = random_raw(kind, seed=4)
    packed = rp.repack(qtype(kind), raw, N, K)
    x = np.random.default_rng(5).standard_normal((1, 3, K)).astype(np.float32)
    want = x.astype(np.float64) @ reference(kind, raw).T.astype(np.float64)  # (1, 3, N)
    error = lambda p: np.abs(run_matmulnbits(p, x) - want).max() / np.abs(want).max()  # noqa: E731
    assert error(packed) < 1e-4
    if packed.bits == 4:  # IQ3_S: the other nibble order reads other weights
        assert packed.codes is not None
        swapped = (packed.codes >> 4) | (packed.codes << 4)
        assert error(replace(packed, codes=swapped)) > 1e-2


def test_layouts_are_as_documented() -> None:
    """8-bit codes for the codebooks, 4-bit + offsets for IQ3_S's odd values."""
    layouts = {
        kind: (p.bits, p.block, p.offsets is not None)
        for kind in CODEBOOK
        for p in [rp.repack(qtype(kind), random_raw(kind), N, K)]
    }
    assert layouts == {
        "IQ2_XXS": (8, 32, False),
        "IQ2_XS": (8, 16, False),
        "IQ2_S": (8, 16, False),
        "IQ3_XXS": (8, 32, False),
        "IQ3_S": (4, 32, True),
        "MXFP4": (8, 32, False),
    }


@pytest.mark.parametrize("kind", ["IQ2_XXS", "IQ3_XXS", "IQ3_S", "MXFP4"])
def test_codebook_values_are_affine_only_for_iq3_s(kind: str) -> None:
    """Why 8 bits: one block's possible values are an arithmetic progression (4-bit code,
    scale, offset) only for IQ3_S; gguf-py's own grids say so."""
    if kind == "MXFP4":
        values = set(gguf.quants.MXFP4.kvalues)
    else:
        cls = getattr(gguf.quants, kind)
        cls.init_grid()
        magnitudes = set(np.asarray(cls.grid).astype(int).ravel())
        values = magnitudes | {-m for m in magnitudes}
    steps = set(np.diff(sorted(values)))
    assert (len(steps) == 1 and len(values) <= 16) == (kind == "IQ3_S"), sorted(values)


def test_mxfp4_exponent_edges_are_exact() -> None:
    """e8m0 exponents 0 and 1 are float32 subnormals (2^-128, 2^-127); 250 scales to 2^122."""
    rng = np.random.default_rng(6)
    raw = rng.integers(0, 256, (N, K // 32, 17), dtype=np.uint8)
    raw[..., 0] = rng.choice(np.array([0, 1, 2, 127, 128, 200, 250], dtype=np.uint8), raw.shape[:2])
    raw = raw.reshape(N, -1)
    got = rp.decode(rp.repack(qtype("MXFP4"), raw, N, K))
    np.testing.assert_array_equal(got.view(np.uint32), reference("MXFP4", raw).view(np.uint32))


# ---------------------------------------------------------------- tiny models, end to end

# hidden 256 / ffn 512: rows long enough for the 256-weight IQ blocks (128 would fall back to
# IQ4_NL, as llama.cpp does). IQ3_XXS's mix also holds IQ2_S (attn_q/k), IQ3_S and Q3_K.
# Three run by default (~20 s each on 2 busy cores); the other three are marked slow.
_SLOW = pytest.mark.slow
CASES = [
    ("qwen3", "IQ2_XXS"),
    ("llama", "IQ3_XXS"),
    ("llama", "MXFP4"),
    pytest.param("llama", "IQ2_XS", marks=_SLOW),
    pytest.param("qwen3", "IQ2_S", marks=_SLOW),
    pytest.param("qwen3", "IQ3_S", marks=_SLOW),
]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _write(cache_dir: Path, arch: str, quant: str) -> tuple[Path, torch.nn.Module]:
    path = cache_dir / f"{arch}-{quant}.gguf"
    config = tiny_config(arch, hidden_size=256, intermediate_size=512)
    return path, write_tiny_model(path, arch, quant, config=config)


def _types(path: Path) -> set[str]:
    return {t.tensor_type.name for t in gguf.GGUFReader(path).tensors}


@pytest.mark.parametrize(("arch", "quant"), CASES)
def test_fast_path_matches_transformers(cache_dir: Path, arch: str, quant: str) -> None:
    path, reference_model = _write(cache_dir, arch, quant)
    assert quant in _types(path)  # the mix really holds the type under test
    exact = build_fast_runner(path, accuracy=0, window=WINDOW)
    assert exact is not None, f"the fast path declined {arch} {quant}"
    assert_matches_reference(exact, reference_model)


def test_int8_activations_stay_close_on_two_bit_weights(cache_dir: Path) -> None:
    path, reference_model = _write(cache_dir, "qwen3", "IQ2_XXS")
    runner = build_fast_runner(path, window=WINDOW)
    assert runner is not None
    expected = reference_logits(reference_model, PROMPT)
    cosine = torch.nn.functional.cosine_similarity(
        torch.from_numpy(runner.extend(PROMPT)), expected, dim=-1
    )
    assert float(cosine.min()) > 0.995, cosine


def test_memory_estimate_counts_the_repacked_bytes(cache_dir: Path) -> None:
    """The estimate before loading is `resident_nbytes` per matrix (the repacked arrays plus
    ORT's block sums), exact for the new types."""
    from engine.gguf.header import read_gguf_summary
    from engine.models import _fast_weight_bytes

    path, _ = _write(cache_dir, "qwen3", "IQ3_XXS")
    reader = gguf.GGUFReader(path)
    matrices = [t for t in reader.tensors if len(t.shape) >= 2]
    repacked = sum(
        rp.repack(t.tensor_type, t.data, int(t.shape[1]), int(t.shape[0])).resident_nbytes
        for t in matrices
    )  # tied embeddings: the head is this repacked matrix; its rows are read from the file
    embd = next(t for t in matrices if t.name == "token_embd.weight")
    vectors = sum(4 * int(t.n_elements) for t in reader.tensors if len(t.shape) < 2)
    expected = repacked + int(embd.n_bytes) + vectors
    assert _fast_weight_bytes(read_gguf_summary(path)) == expected
