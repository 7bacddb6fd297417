"""`python -m bench vision-prefill`: the image tokens' prefill, Hearth next to llama.cpp.

For each row of `bench.vision` (Gemma 4 E2B at budgets 70 and 280, Qwen3.5-0.8B) writes a
random-weight language model of the real text shapes (`bench.synth.gemma4`, `bench.synth.qwen35`)
and the projector of the same width, lets libmtmd encode the bench's 1024 x 768 picture once,
and times the prefill of those same rows at the start of an empty context on the same threads:
- llama.cpp: `mtmd_helper_decode_image_chunk`, libmtmd's own decode of an encoded image
  (Gemma's image runs with the causal mask off, Qwen's with its M-RoPE positions);
- Hearth: the fast path's runner (`OnnxRunner.extend` over the image's ids, the rows given
  with `add_image`), as `engine.image_input` drives it.
Prints seconds (best of ``--repeat``) and the ratio, plus a JSON line per row.

Owns only the measuring; the runner is `engine.runners`, the encode `bench.vision_mtmd`.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROWS = [("gemma4-e2b", 70), ("gemma4-e2b", 280), ("qwen3.5-0.8b", None)]
LANGUAGE = {"gemma4-e2b": "gemma4", "qwen3.5-0.8b": "qwen35"}


def _language_model(folder: Path, key: str, plan: str) -> Path:
    path = folder / f"{LANGUAGE[key]}-{plan}.gguf"
    if not path.exists():
        if LANGUAGE[key] == "gemma4":
            from bench.synth.gemma4 import write_real_size_gemma4

            write_real_size_gemma4(path, plan)
        else:
            from bench.synth.qwen35 import write_real_size_qwen35

            write_real_size_qwen35(path, plan)
    return path


def _llama_prefill(
    model: Path, mmproj: Path, rgb: np.ndarray, budget: int | None, threads: int, repeat: int
) -> tuple[float, np.ndarray, tuple[int, int]]:
    """(best seconds of libmtmd's image decode, the rows it decoded, the (ny, nx) grid)."""
    import llama_cpp as lc
    from llama_cpp import mtmd_cpp as m

    from bench.vision_mtmd import _quiet
    from engine.vision.mmproj import open_mmproj
    from engine.vision.preprocess import token_limits

    mm = open_mmproj(mmproj)
    lo, hi = token_limits(mm.projector, budget) if budget else (-1, -1)
    del mm
    with _quiet():
        lc.llama_backend_init()
        mparams = lc.llama_model_default_params()
        model_p = lc.llama_model_load_from_file(str(model).encode(), mparams)
        cp = lc.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch = 4096, 2048, 512
        cp.n_threads = cp.n_threads_batch = threads
        ctx = lc.llama_init_from_model(model_p, cp)
        params = m.mtmd_context_params_default()
        params.use_gpu, params.print_timings, params.warmup = False, False, False
        params.n_threads = threads
        params.image_min_tokens, params.image_max_tokens = lo, hi
        mctx = m.mtmd_init_from_file(str(mmproj).encode(), model_p, params)
    h, w, _ = rgb.shape
    buf = (ctypes.c_uint8 * rgb.size).from_buffer_copy(np.ascontiguousarray(rgb).tobytes())
    bitmap = m.mtmd_bitmap_init(w, h, buf)
    chunks = m.mtmd_input_chunks_init()
    try:
        text = m.mtmd_input_text()
        text.text = m.mtmd_default_marker()
        text.text_len = len(text.text)
        text.add_special, text.parse_special = False, True
        bitmaps = (m.mtmd_bitmap_p_ctypes * 1)(bitmap)
        with _quiet():
            assert m.mtmd_tokenize(mctx, chunks, ctypes.byref(text), bitmaps, 1) == 0
        chunk = next(
            c for c in (m.mtmd_input_chunks_get(chunks, i)
                        for i in range(m.mtmd_input_chunks_size(chunks)))
            if m.mtmd_input_chunk_get_type(c) == 1
        )  # fmt: skip
        image = m.mtmd_input_chunk_get_tokens_image(chunk)
        n = m.mtmd_image_tokens_get_n_tokens(image)
        grid = (m.mtmd_image_tokens_get_ny(image), m.mtmd_image_tokens_get_nx(image))
        with _quiet():
            assert m.mtmd_encode_chunk(mctx, chunk) == 0
        width = int(lc.llama_model_n_embd_inp(model_p))
        embd = m.mtmd_get_output_embd(mctx)
        rows = np.ctypeslib.as_array(embd, shape=(n * width,)).copy().reshape(n, width)
        no_callback = m.mtmd_helper_post_decode_callback()  # NULL: no callback
        best = float("inf")
        for _ in range(repeat):
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
            new_n_past = lc.llama_pos(0)
            start = time.perf_counter()
            with _quiet():
                rc = m.mtmd_helper_decode_image_chunk(
                    mctx,
                    ctx,
                    chunk,
                    embd,
                    0,
                    0,
                    cp.n_batch,
                    ctypes.byref(new_n_past),
                    no_callback,
                    None,
                )
            best = min(best, time.perf_counter() - start)
            assert rc == 0, f"mtmd_helper_decode_image_chunk failed ({rc})"
        return best, rows, grid
    finally:
        with _quiet():
            m.mtmd_input_chunks_free(chunks)
            m.mtmd_bitmap_free(bitmap)
            m.mtmd_free(mctx)
            lc.llama_free(ctx)
            lc.llama_model_free(model_p)


def _hearth_prefill(runner: Any, rows: np.ndarray, grid: tuple[int, int], qwen: bool,
                    repeat: int) -> float:  # fmt: skip
    from engine.runners.image_rows import ImageEmbedding

    image = ImageEmbedding(7, rows.astype(np.float32), grid if qwen else (1, len(rows)))
    runner.add_image(image)
    best = float("inf")
    for _ in range(repeat):
        runner.reset()
        start = time.perf_counter()
        runner.extend(image.ids, last_only=True)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench vision-prefill", description=__doc__)
    parser.add_argument("--plan", default="Q4_K_M", help="the language models' llama.cpp mix")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    parser.add_argument("--only", default=None, help="one projector key (gemma4-e2b, ...)")
    args = parser.parse_args(argv)
    from bench.synth.mmproj import REAL, write_mmproj
    from bench.vision_reference import synthetic_image
    from engine.runners.fast_open import fast_runner_or_reason

    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-vision-prefill-"))
    folder.mkdir(parents=True, exist_ok=True)
    rgb = synthetic_image(768, 1024)
    print(f"{'projector':<14} {'budget':>6} {'tokens':>7} {'hearth s':>9} {'llama s':>8} "
          f"{'ratio':>6}")  # fmt: skip
    runners: dict[str, Any] = {}
    for key, budget in ROWS:
        if args.only and key != args.only:
            continue
        mmproj = folder / f"{key}-F16.gguf"
        if not mmproj.exists():
            write_mmproj(mmproj, REAL[key], "F16")
        model = _language_model(folder, key, args.plan)
        peer_s, rows, grid = _llama_prefill(model, mmproj, rgb, budget, args.threads, args.repeat)
        if key not in runners:
            runner, why = fast_runner_or_reason(model, threads=args.threads, window=4096)
            if runner is None:
                raise SystemExit(f"the fast path cannot run {model.name}: {why}")
            runners[key] = runner
        ours_s = _hearth_prefill(runners[key], rows, grid, key.startswith("qwen"), args.repeat)
        print(f"{key:<14} {budget or '-':>6} {len(rows):>7} {ours_s:>9.2f} {peer_s:>8.2f} "
              f"{ours_s / peer_s:>6.2f}")  # fmt: skip
        print(json.dumps({"projector": key, "budget": budget, "tokens": len(rows),
                          "language_model": model.name, "hearth_s": round(ours_s, 3),
                          "llama_s": round(peer_s, 3), "threads": args.threads}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
