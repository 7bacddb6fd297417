"""Peak memory of one image encode, Hearth's ONNX Runtime tower against libmtmd's, each alone.

`peak_mb` runs ``python -m bench.vision_peak SIDE MMPROJ TEXT BUDGET THREADS`` in a fresh
process per side and reads back the child's peak resident set (``VmHWM``; not ``ru_maxrss``,
which a forked child inherits from the benchmark's own, larger process): opening the
mmproj, building the session or the mtmd context, and one encode of the bench's 1024 x 768
picture. Both children import numpy, onnxruntime and llama_cpp before anything else, so the
libraries' own footprint is the same on both sides and the difference is the encoders'.

Owns only this measurement; the timing is `bench.vision`, the peer call `bench.vision_mtmd`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def peak_mb(
    side: str,
    mmproj: Path,
    text: Path,
    budget: int | None,
    threads: int,
    tower: tuple[int, bool] | None = None,
) -> float:
    """The peak RSS in MB of a fresh process that encodes the picture once with ``side``
    (``tower``: the ORT tower's (blocks a session, shared arena); None its defaults)."""
    group, arena = tower or (0, -1)
    cmd = [sys.executable, "-m", "bench.vision_peak", side, str(mmproj), str(text),
           str(budget or 0), str(threads), str(group), str(int(arena))]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{side} encode failed: {done.stderr.strip()[-300:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"])


def _child(side: str, mmproj: Path, text: Path, budget: int, threads: int, tower: list[int]
           ) -> None:  # fmt: skip
    import llama_cpp  # noqa: F401  (the same libraries on both sides)
    import numpy as np
    import onnxruntime  # noqa: F401

    from bench.vision_mtmd import mtmd_encode
    from bench.vision_reference import synthetic_image
    from engine.vision.mmproj import open_mmproj
    from engine.vision.ort_tower import GROUP, SHARED_ARENA, encode_fast, tower_for
    from engine.vision.preprocess import prepare, token_limits

    rgb = synthetic_image(768, 1024)
    if side == "ort":
        mm = open_mmproj(mmproj)
        group, arena = tower
        ort = tower_for(mm, threads, group or GROUP, None, SHARED_ARENA if arena < 0 else arena > 0)
        assert ort is not None, "ONNX Runtime cannot take this file"
        rows = encode_fast(ort, prepare(rgb, mm.params, mm.projector, budget or None))
    else:
        mm = open_mmproj(mmproj)  # only for the token limits; closed before libmtmd opens it
        lo, hi = token_limits(mm.projector, budget) if budget else (-1, -1)
        del mm
        rows = mtmd_encode(mmproj, text, rgb, min_tokens=lo, max_tokens=hi, threads=threads,
                           flash_attn=-1).embeddings  # fmt: skip
    status = Path("/proc/self/status").read_text()
    peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    peak = peak_kb / 1024
    print(json.dumps({"side": side, "tokens": int(np.asarray(rows).shape[0]), "peak_mb": peak}))


if __name__ == "__main__":
    side, mmproj, text, budget, threads = sys.argv[1:6]
    _child(
        side, Path(mmproj), Path(text), int(budget), int(threads), [int(a) for a in sys.argv[6:8]]
    )
