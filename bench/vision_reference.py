"""Pin libmtmd's image embeddings on the tiny synthetic mmprojs into a test fixture.

``python -m bench.vision_reference [OUT.npz]`` (default: the fixture the vision parity test
reads) writes every tiny projector (`bench.synth.mmproj.TINY`) in F16, BF16 and Q8_0 with seed
0, pairs each with a tiny random llama of the projector's width (`bench.synth.core`), encodes
the `CASES` images with llama.cpp's libmtmd (`bench.vision_mtmd`) and stores, per case, the
image token count and the rows. The test then checks Hearth's encoder against them without
llama.cpp installed. Needs llama-cpp-python (0.3.36 pinned these values).

Owns the cases and the synthetic test image; not the writer nor the peer call.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.synth.mmproj import TINY, write_mmproj

FIXTURE = Path(__file__).resolve().parents[1] / "tests/engine/vision/mtmd_reference.npz"
# (case name, TINY key, matrix type, image (h, w), budget or None)
CASES: list[tuple[str, str, str, tuple[int, int], int | None]] = [
    *((f"gemma3-{t}", "gemma3", t, (100, 150), None) for t in ("F16", "BF16", "Q8_0")),
    *((f"gemma4v-{t}", "gemma4v", t, (100, 150), None) for t in ("F16", "BF16", "Q8_0")),
    ("gemma4v-F16-budget140", "gemma4v", "F16", (300, 200), 140),
    *((f"qwen3vl-{t}", "qwen3vl", t, (128, 200), None) for t in ("F16", "BF16", "Q8_0")),
    ("qwen3vl-F16-small", "qwen3vl", "F16", (30, 45), None),
    ("qwen3vl-F16-budget16", "qwen3vl", "F16", (300, 500), 16),
    ("qwen3vl-deepstack-F16", "qwen3vl-deepstack", "F16", (128, 200), None),
]


def synthetic_image(h: int, w: int) -> np.ndarray:
    """A deterministic (h, w, 3) uint8 picture: gradients, a disc and noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    rng = np.random.default_rng(h * 1000 + w)
    disc = ((y - h / 2) ** 2 + (x - w / 3) ** 2 < (min(h, w) / 4) ** 2) * 120.0
    r = 255 * x / max(w - 1, 1)
    g = 255 * y / max(h - 1, 1)
    b = disc + rng.integers(0, 60, (h, w))
    return np.clip(np.stack([r, g, b], -1), 0, 255).astype(np.uint8)


def mmproj_file(folder: Path, key: str, matrix_type: str) -> Path:
    """The tiny mmproj ``key`` in ``matrix_type`` (seed 0), written into ``folder`` once."""
    path = folder / f"{key}-{matrix_type}.gguf"
    if not path.exists():
        write_mmproj(path, TINY[key], matrix_type)
    return path


def _limits(key: str, budget: int | None) -> tuple[int, int]:
    """libmtmd's token limits for ``budget``: the same mapping the engine uses."""
    from engine.vision.preprocess import token_limits
    from engine.vision.projectors import PROJECTORS

    if budget is None:
        return -1, -1
    return token_limits(PROJECTORS[TINY[key].projector], budget)


def refresh(out: Path) -> None:
    from bench.synth.core import tiny_config, write_tiny_model
    from bench.vision_mtmd import mtmd_encode

    arrays: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        texts: dict[int, Path] = {}
        for name, key, mtype, (h, w), budget in CASES:
            shape = TINY[key]
            width = shape.proj_dim * (1 + len(shape.deepstack))
            if width not in texts:
                config = tiny_config("llama")
                config.hidden_size, config.head_dim = width, 64
                config.num_attention_heads, config.num_key_value_heads = width // 64, 2
                texts[width] = folder / f"text{width}.gguf"
                write_tiny_model(texts[width], "llama", "F32", config=config)
            lo, hi = _limits(key, budget)
            ref = mtmd_encode(
                mmproj_file(folder, key, mtype), texts[width], synthetic_image(h, w),
                min_tokens=lo, max_tokens=hi,
            )  # fmt: skip
            arrays[name] = ref.embeddings
            print(f"{name}: {ref.n_tokens} tokens, rows {ref.embeddings.shape}")
    np.savez_compressed(out, **arrays)  # type: ignore[arg-type]  # numpy stubs: allow_pickle
    print(f"wrote {out}")


if __name__ == "__main__":
    refresh(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE)
