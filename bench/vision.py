"""`python -m bench vision`: one image's encode time, Hearth next to llama.cpp's libmtmd.

Writes random-weight projectors of real shapes (`bench.synth.mmproj.REAL`: Gemma 4 E2B's at
budgets 70 and 280, Qwen3.5-0.8B's) and a small language model of each one's width for libmtmd,
encodes the same synthetic 1024 x 768 picture with Hearth's two encoders (numpy, the reference;
ORT, the blocks in ONNX Runtime sessions, `engine.vision.ort_tower`, what `ImageEncoder` runs)
and libmtmd on the same threads, and prints the token counts, seconds (best of ``--repeat``;
libmtmd in its default, fastest setting, timed from its tokenize, which pre-processes, to the
end of its encode, without loading the files; ORT and libmtmd take turns, the first side
swapped every round, and the numpy reference runs after both), ORT's session build, ORT's
ratio to libmtmd, the largest difference of each from libmtmd's float32-attention rows, and
the peak memory of one ORT encode and one libmtmd encode, each in a fresh process
(`bench.vision_peak`), plus a JSON line per row.
The image tokens' prefill is `python -m bench vision-prefill` (`bench.vision_prefill`).

Owns only the measuring; the encoders are `engine.vision`, the peer call `bench.vision_mtmd`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS = [("gemma4-e2b", 70), ("gemma4-e2b", 280), ("qwen3.5-0.8b", None)]


def _text_model(folder: Path, width: int) -> Path:
    from bench.synth.core import tiny_config, write_tiny_model

    path = folder / f"text{width}.gguf"
    if not path.exists():
        config = tiny_config("llama")
        config.hidden_size, config.head_dim = width, 64
        config.num_attention_heads, config.num_key_value_heads = width // 64, 2
        config.num_hidden_layers = 1
        write_tiny_model(path, "llama", "Q8_0", config=config)
    return path


def _best(fn: object, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best, out


def _gap(rows: object, ref: np.ndarray) -> float:
    a = np.asarray(rows)
    return float(np.abs(a - ref).max()) if a.shape == ref.shape else -1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench vision", description=__doc__)
    parser.add_argument("--matrix-type", default="F16", choices=["F16", "BF16", "Q8_0"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.threads < 1:
        parser.error(f"--repeat and --threads must be >= 1, got {args.repeat} and {args.threads}")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    from bench.synth.mmproj import REAL, write_mmproj
    from bench.vision_mtmd import mtmd_encode
    from bench.vision_peak import peak_mb
    from bench.vision_reference import synthetic_image
    from engine.vision.encoders import encode
    from engine.vision.mmproj import open_mmproj
    from engine.vision.ort_tower import encode_fast, tower_for
    from engine.vision.preprocess import prepare, token_limits

    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-vision-"))
    folder.mkdir(parents=True, exist_ok=True)
    rgb = synthetic_image(768, 1024)
    print(f"{'projector':<14} {'budget':>6} {'tokens':>7} {'numpy s':>8} {'ort s':>6} "
          f"{'build s':>7} {'mtmd s':>7} {'ort/mtmd':>8} {'np diff':>8} "
          f"{'ort diff':>8} {'ort MB':>7} {'mtmd MB':>7} {'MB ratio':>8}")  # fmt: skip
    for key, budget in ROWS:
        path = folder / f"{key}-{args.matrix_type}.gguf"
        if not path.exists():
            write_mmproj(path, REAL[key], args.matrix_type)
        mm = open_mmproj(path)
        start = time.perf_counter()
        tower = tower_for(mm, args.threads)
        build_s = time.perf_counter() - start
        assert tower is not None, "ONNX Runtime cannot take this file"
        lo, hi = token_limits(mm.projector, budget) if budget else (-1, -1)
        text = _text_model(folder, mm.out_width)
        ort_s = peer_s = float("inf")
        for r in range(args.repeat):  # the two sides alternate, first side swapped each round
            for side in ("ort", "mtmd") if r % 2 == 0 else ("mtmd", "ort"):
                if side == "ort":
                    one_s, ort_rows = _best(
                        lambda tower=tower, mm=mm, budget=budget: encode_fast(
                            tower, prepare(rgb, mm.params, mm.projector, budget)
                        ),
                        1,
                    )
                    ort_s = min(ort_s, one_s)
                else:  # libmtmd's best setting: its default (flash attention on); its
                    # tokenize (pre-processing) + encode only, as Hearth's prepare + encode
                    peer = mtmd_encode(path, text, rgb, min_tokens=lo, max_tokens=hi,
                                       threads=args.threads, flash_attn=-1)  # fmt: skip
                    peer_s = min(peer_s, peer.seconds)
        del tower
        # the numpy reference last: its float32 work left ORT's next encodes up to 15 % slower
        ours_s, rows = _best(
            lambda mm=mm, budget=budget: encode(mm, prepare(rgb, mm.params, mm.projector, budget)),
            args.repeat,
        )
        ref = mtmd_encode(path, text, rgb, min_tokens=lo, max_tokens=hi, threads=args.threads)
        ours = np.asarray(rows)
        ort_mb = peak_mb("ort", path, text, budget, args.threads)
        mtmd_mb = peak_mb("mtmd", path, text, budget, args.threads)
        diff, ort_diff = _gap(ours, ref.embeddings), _gap(ort_rows, ref.embeddings)
        print(f"{key:<14} {budget or '-':>6} {ours.shape[0]:>7} {ours_s:>8.2f} {ort_s:>6.2f} "
              f"{build_s:>7.2f} {peer_s:>7.2f} {ort_s / peer_s:>8.2f} {diff:>8.2g} "
              f"{ort_diff:>8.2g} {ort_mb:>7.0f} {mtmd_mb:>7.0f} "
              f"{ort_mb / mtmd_mb:>8.2f}")  # fmt: skip
        print(json.dumps({"projector": key, "budget": budget, "tokens": int(ours.shape[0]),
                          "mtmd_tokens": ref.n_tokens, "hearth_s": round(ours_s, 3),
                          "ort_s": round(ort_s, 3), "ort_build_s": round(build_s, 3),
                          "mtmd_s": round(peer_s, 3), "max_abs_diff": diff,
                          "ort_max_abs_diff": ort_diff, "ort_peak_mb": round(ort_mb),
                          "mtmd_peak_mb": round(mtmd_mb),
                          "matrix_type": args.matrix_type, "threads": args.threads}))  # fmt: skip
    return 0
