"""`python -m bench.vision_group`: paired A/B of the ORT tower's settings, beside libmtmd.

For each row of `bench.vision` (Gemma 4 E2B at budgets 70 and 280, Qwen3.5-0.8B; F16 files of
the real shapes, random weights) builds one `engine.vision.ort_tower.OrtTower` per setting
(``--groups``: blocks a session; ``--spin``: ORT's worker spinning, 0/1) and an mtmd context,
then encodes the bench's 1024 x 768 picture in rounds, every setting and libmtmd once a round
in a rotating order, so each setting sees the same load. Prints per setting the best and
median wall seconds, the best process CPU seconds (ORT's threads included), the ratio of the
best to libmtmd's best (its tokenize + encode only, no loading: `bench.vision_mtmd`), the
largest difference from the first setting's rows, the load average before and after, and
with ``--peak`` each setting's peak memory in a fresh process (`bench.vision_peak`).

A measurement for docs/vision.md, not a test; owns no encoder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROWS = {"g70": ("gemma4-e2b", 70), "g280": ("gemma4-e2b", 280), "qwen": ("qwen3.5-0.8b", None)}


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


class _Mtmd:
    """An mtmd context kept open across rounds, so each round times only the encode."""

    def __init__(self, mmproj: Path, text: Path, lo: int, hi: int, threads: int) -> None:
        import llama_cpp as lc
        from llama_cpp import mtmd_cpp as m

        from bench.vision_mtmd import _quiet

        self.lc, self.m = lc, m
        with _quiet():
            lc.llama_backend_init()
            self.model = lc.llama_model_load_from_file(
                str(text).encode(), lc.llama_model_default_params()
            )
            params = m.mtmd_context_params_default()
            params.use_gpu, params.print_timings, params.warmup = False, False, False
            params.n_threads, params.flash_attn_type = threads, -1  # its default: fastest
            params.image_min_tokens, params.image_max_tokens = lo, hi
            self.ctx = m.mtmd_init_from_file(str(mmproj).encode(), self.model, params)
        self.width = int(lc.llama_model_n_embd_inp(self.model))

    def encode(self, rgb: np.ndarray) -> float:
        from bench.vision_mtmd import _encode

        return _encode(self.m, self.ctx, rgb, self.width).seconds

    def close(self) -> None:
        self.m.mtmd_free(self.ctx)
        self.lc.llama_model_free(self.model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vision_group", description=__doc__)
    parser.add_argument("--rows", default="g70,g280,qwen")
    parser.add_argument("--groups", default="1,2,4")
    parser.add_argument("--spin", default="0", help="spinning settings to try: 0, 1 or 0,1")
    parser.add_argument("--arena", default="0,1", help="shared arena settings: 0, 1 or 0,1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peak", action="store_true", help="also each setting's peak memory")
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    args = parser.parse_args(argv)
    from bench.synth.mmproj import REAL, write_mmproj
    from bench.vision import _text_model
    from bench.vision_peak import peak_mb
    from bench.vision_reference import synthetic_image
    from engine.vision.mmproj import open_mmproj
    from engine.vision.ort_tower import encode_fast, tower_for
    from engine.vision.preprocess import prepare, token_limits

    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-vision-"))
    folder.mkdir(parents=True, exist_ok=True)
    rgb = np.ascontiguousarray(synthetic_image(768, 1024))
    settings = [
        (int(g), s == "1", a == "1")
        for g in args.groups.split(",")
        for s in args.spin.split(",")
        for a in args.arena.split(",")
    ]
    for row in args.rows.split(","):
        key, budget = ROWS[row]
        path = folder / f"{key}-F16.gguf"
        if not path.exists():
            write_mmproj(path, REAL[key], "F16")
        mm = open_mmproj(path)
        lo, hi = token_limits(mm.projector, budget) if budget else (-1, -1)
        text = _text_model(folder, mm.out_width)
        towers: dict[Any, Any] = {s: tower_for(mm, args.threads, *s) for s in settings}
        peer = _Mtmd(path, text, lo, hi, args.threads)
        wall: dict[Any, list[float]] = {s: [] for s in [*settings, "mtmd"]}
        cpu: dict[Any, list[float]] = {s: [] for s in [*settings, "mtmd"]}
        rows: dict[Any, np.ndarray] = {}
        before = _load()
        for r in range(args.rounds):
            order = [*settings, "mtmd"]
            order = order[r % len(order) :] + order[: r % len(order)]
            for s in order:
                c0, w0 = time.process_time(), time.perf_counter()
                if s == "mtmd":
                    wall[s].append(peer.encode(rgb))
                    cpu[s].append(time.process_time() - c0)
                    continue
                rows[s] = encode_fast(towers[s], prepare(rgb, mm.params, mm.projector, budget))
                wall[s].append(time.perf_counter() - w0)
                cpu[s].append(time.process_time() - c0)
        after = _load()
        peer.close()
        del towers
        peer_best = min(wall["mtmd"])
        print(f"{row}: {key} budget {budget or '-'}, {args.rounds} rounds, load {before} -> "
              f"{after}; libmtmd best {peer_best:.2f} s, median "
              f"{statistics.median(wall['mtmd']):.2f} s")  # fmt: skip
        first = rows[settings[0]]
        for s in settings:
            best = min(wall[s])
            mb = (
                peak_mb("ort", path, text, budget, args.threads, (s[0], s[2])) if args.peak else 0.0
            )
            record = {"row": row, "group": s[0], "spin": s[1], "arena": s[2],
                      "best_s": round(best, 3), "median_s": round(statistics.median(wall[s]), 3),
                      "cpu_s": round(min(cpu[s]), 3), "mtmd_s": round(peer_best, 3),
                      "mtmd_cpu_s": round(min(cpu["mtmd"]), 3),
                      "ratio": round(best / peer_best, 3),
                      "diff": float(np.abs(rows[s] - first).max()), "peak_mb": round(mb),
                      "load_before": before, "load_after": after}  # fmt: skip
            print(json.dumps(record))
        if args.peak:
            mb = peak_mb("mtmd", path, text, budget, args.threads)
            print(json.dumps({"row": row, "side": "mtmd", "peak_mb": round(mb)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
