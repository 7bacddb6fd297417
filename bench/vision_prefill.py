"""`python -m bench vision-prefill`: the image tokens' prefill, Hearth next to llama.cpp.

For each row of `bench.vision` (Gemma 4 E2B at budgets 70 and 280, Qwen3.5-0.8B) writes a
random-weight language model of the real text shapes (`bench.synth.gemma4`, `bench.synth.qwen35`)
and the projector of the same width, lets libmtmd encode the bench's 1024 x 768 picture once,
and times the prefill of those same rows at the start of an empty context on the same threads:
- llama.cpp: `mtmd_helper_decode_image_chunk`, libmtmd's own decode of an encoded image
  (Gemma's image runs with the causal mask off, Qwen's with its M-RoPE positions);
- Hearth: the fast path's runner (`OnnxRunner.extend` over the image's ids, the rows given
  with `add_image`), as `engine.image_input` drives it.

Both sides stay loaded in this one process and take turns: each of ``--rounds`` rounds times
one prefill of each side, the first side swapped every round (llama, Hearth, Hearth, llama,
...), so a shared machine's changing load falls on both alike. Every round's wall and CPU
seconds (this process's, both threads) and the load average are printed; the summary gives
each side's best and median and their ratios. ``--text`` also times, in the same rounds, a
text prefill of as many tokens on both sides: what an image costs over text, per side.
``--json``: one JSON object per row instead of the table.

Owns only the measuring; the runner is `engine.runners`, the encode `bench.vision_mtmd`.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
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


class LlamaSide:
    """llama.cpp with libmtmd on one model + projector: the image chunk encoded once, then
    its decode (and a text decode of as many tokens) timed at the start of an empty context."""

    def __init__(
        self, model: Path, mmproj: Path, rgb: np.ndarray, budget: int | None, threads: int
    ) -> None:
        import llama_cpp as lc
        from llama_cpp import mtmd_cpp as m

        from bench.vision_mtmd import _quiet
        from engine.vision.mmproj import open_mmproj
        from engine.vision.preprocess import token_limits

        self.lc, self.m, self._quiet = lc, m, _quiet
        mm = open_mmproj(mmproj)
        lo, hi = token_limits(mm.projector, budget) if budget else (-1, -1)
        del mm
        with _quiet():
            lc.llama_backend_init()
            self.model = lc.llama_model_load_from_file(
                str(model).encode(), lc.llama_model_default_params()
            )
            cp = lc.llama_context_default_params()
            cp.n_ctx, cp.n_batch, cp.n_ubatch = 4096, 2048, 512
            cp.n_threads = cp.n_threads_batch = threads
            self.n_batch = cp.n_batch
            self.ctx = lc.llama_init_from_model(self.model, cp)
            params = m.mtmd_context_params_default()
            params.use_gpu, params.print_timings, params.warmup = False, False, False
            params.n_threads = threads
            params.image_min_tokens, params.image_max_tokens = lo, hi
            self.mctx = m.mtmd_init_from_file(str(mmproj).encode(), self.model, params)
        h, w, _ = rgb.shape
        buf = (ctypes.c_uint8 * rgb.size).from_buffer_copy(np.ascontiguousarray(rgb).tobytes())
        self.bitmap = m.mtmd_bitmap_init(w, h, buf)
        self.chunks = m.mtmd_input_chunks_init()
        text = m.mtmd_input_text()
        text.text = m.mtmd_default_marker()
        text.text_len = len(text.text)
        text.add_special, text.parse_special = False, True
        bitmaps = (m.mtmd_bitmap_p_ctypes * 1)(self.bitmap)
        with _quiet():
            assert m.mtmd_tokenize(self.mctx, self.chunks, ctypes.byref(text), bitmaps, 1) == 0
        self.chunk = next(
            c for c in (m.mtmd_input_chunks_get(self.chunks, i)
                        for i in range(m.mtmd_input_chunks_size(self.chunks)))
            if m.mtmd_input_chunk_get_type(c) == 1
        )  # fmt: skip
        image = m.mtmd_input_chunk_get_tokens_image(self.chunk)
        n = m.mtmd_image_tokens_get_n_tokens(image)
        self.grid = (m.mtmd_image_tokens_get_ny(image), m.mtmd_image_tokens_get_nx(image))
        with _quiet():
            assert m.mtmd_encode_chunk(self.mctx, self.chunk) == 0
        width = int(lc.llama_model_n_embd_inp(self.model))
        self.embd = m.mtmd_get_output_embd(self.mctx)
        self.rows = np.ctypeslib.as_array(self.embd, shape=(n * width,)).copy().reshape(n, width)

    def image(self) -> None:
        lc, m = self.lc, self.m
        lc.llama_memory_clear(lc.llama_get_memory(self.ctx), True)
        new_n_past = lc.llama_pos(0)
        no_callback = m.mtmd_helper_post_decode_callback()  # NULL: no callback
        with self._quiet():
            rc = m.mtmd_helper_decode_image_chunk(
                self.mctx, self.ctx, self.chunk, self.embd, 0, 0, self.n_batch,
                ctypes.byref(new_n_past), no_callback, None,
            )  # fmt: skip
        assert rc == 0, f"mtmd_helper_decode_image_chunk failed ({rc})"

    def text(self, ids: list[int]) -> None:
        lc = self.lc
        lc.llama_memory_clear(lc.llama_get_memory(self.ctx), True)
        batch = lc.llama_batch_init(len(ids), 0, 1)
        try:
            batch.n_tokens = len(ids)
            for i, token in enumerate(ids):
                batch.token[i], batch.pos[i] = token, i
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, 0
                batch.logits[i] = i == len(ids) - 1  # as the image: the last row's logits
            assert lc.llama_decode(self.ctx, batch) == 0
        finally:
            lc.llama_batch_free(batch)

    def close(self) -> None:
        m, lc = self.m, self.lc
        with self._quiet():
            m.mtmd_input_chunks_free(self.chunks)
            m.mtmd_bitmap_free(self.bitmap)
            m.mtmd_free(self.mctx)
            lc.llama_free(self.ctx)
            lc.llama_model_free(self.model)


class HearthSide:
    """The fast path's runner with the same image rows (`add_image`), prefilled from empty."""

    def __init__(self, runner: Any, rows: np.ndarray, grid: tuple[int, int], qwen: bool) -> None:
        from engine.runners.image_rows import ImageEmbedding

        self.runner = runner
        self.image_embedding = ImageEmbedding(
            7, rows.astype(np.float32), grid if qwen else (1, len(rows))
        )
        runner.add_image(self.image_embedding)

    def image(self) -> None:
        self.runner.reset()
        self.runner.extend(self.image_embedding.ids, last_only=True)

    def text(self, ids: list[int]) -> None:
        self.runner.reset()
        self.runner.extend(ids, last_only=True)


def _timed(fn: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def alternate(
    sides: dict[str, dict[str, Callable[[], None]]], rounds: int, report: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Run ``rounds`` rounds; in each, every (side, kind) once, the sides' order swapped every
    round. Returns one record per round: load, and (wall, cpu) per "side kind"."""
    names = list(sides)
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        record: dict[str, Any] = {"round": r + 1, "load": round(os.getloadavg()[0], 2)}
        for side in order:
            for kind, fn in sides[side].items():
                wall, cpu = _timed(fn)
                record[f"{side} {kind}"] = (round(wall, 3), round(cpu, 3))
        out.append(record)
        report("  round {round}  load {load:5.2f}  ".format(**record) + "  ".join(
            f"{k} {w:.2f}s/{c:.2f}cpu" for k, v in record.items()
            if isinstance(v, tuple) for w, c in [v]
        ))  # fmt: skip
    return out


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Best and median wall and CPU seconds per "side kind", and Hearth / llama ratios."""
    keys = [k for k, v in records[0].items() if isinstance(v, tuple)]
    out: dict[str, Any] = {}
    for key in keys:
        walls = [r[key][0] for r in records]
        cpus = [r[key][1] for r in records]
        out[key] = {
            "best_s": min(walls), "median_s": round(statistics.median(walls), 3),
            "best_cpu_s": min(cpus), "median_cpu_s": round(statistics.median(cpus), 3),
        }  # fmt: skip
    for kind in ("image", "text"):
        ours, peer = out.get(f"hearth {kind}"), out.get(f"llama {kind}")
        if ours and peer:
            out[f"ratio {kind}"] = {
                stat: round(ours[stat] / peer[stat], 3)
                for stat in ("best_s", "median_s", "best_cpu_s", "median_cpu_s")
            }
    return out


def _rounds(
    runner: Any, peer: LlamaSide, key: str, rounds: int, text: bool, report: Callable[[str], None]
) -> list[dict[str, Any]]:
    """One row's alternating rounds (closes ``peer``; holds ``runner`` only while it runs)."""
    ours = HearthSide(runner, peer.rows, peer.grid, key.startswith("qwen"))
    n = len(peer.rows)
    ids = [int(t) for t in np.random.default_rng(1).integers(1000, 20000, n)]
    sides: dict[str, dict[str, Callable[[], None]]] = {
        "llama": {"image": peer.image}, "hearth": {"image": ours.image},
    }  # fmt: skip
    if text:
        sides["llama"]["text"] = partial(peer.text, ids)
        sides["hearth"]["text"] = partial(ours.text, ids)
    try:
        return alternate(sides, rounds, report)
    finally:
        peer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench vision-prefill", description=__doc__)
    parser.add_argument("--plan", default="Q4_K_M", help="the language models' llama.cpp mix")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row")
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    parser.add_argument("--only", default=None, help="one projector key (gemma4-e2b, ...)")
    parser.add_argument("--budget", type=int, default=None, help="only this budget's row")
    parser.add_argument("--text", action="store_true", help="also a text prefill as long")
    parser.add_argument("--json", action="store_true", help="JSON lines, no table")
    args = parser.parse_args(argv)
    from bench.synth.mmproj import REAL, write_mmproj
    from bench.vision_reference import synthetic_image
    from engine.runners.fast_open import fast_runner_or_reason

    def report(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-vision-prefill-"))
    folder.mkdir(parents=True, exist_ok=True)
    rgb = synthetic_image(768, 1024)
    runners: dict[str, Any] = {}
    for key, budget in ROWS:
        if (args.only and key != args.only) or (args.budget and budget != args.budget):
            continue
        mmproj = folder / f"{key}-F16.gguf"
        if not mmproj.exists():
            write_mmproj(mmproj, REAL[key], "F16")
        model = _language_model(folder, key, args.plan)
        peer = LlamaSide(model, mmproj, rgb, budget, args.threads)
        if key not in runners:
            # One Hearth model open at a time: its memory, and two graphs converted without
            # experts or dense MLPs on the kernel share the matrices key "None" (cache.py), so
            # a second one opened beside the first finds the first's matrices and fails.
            runners.clear()
            gc.collect()
            runner, why = fast_runner_or_reason(model, threads=args.threads, window=4096)
            if runner is None:
                raise SystemExit(f"the fast path cannot run {model.name}: {why}")
            runners[key] = runner
            del runner  # the dict holds the only reference
        n = len(peer.rows)
        report(f"{key} budget {budget or '-'}: {n} image tokens, {model.name}, "
               f"{args.threads} threads")  # fmt: skip
        records = _rounds(runners[key], peer, key, args.rounds, args.text, report)
        stats = summary(records)
        for kind in ("image", "text") if args.text else ("image",):
            h, lm, r = stats[f"hearth {kind}"], stats[f"llama {kind}"], stats[f"ratio {kind}"]
            report(f"  {kind}: hearth best {h['best_s']:.2f}s median {h['median_s']:.2f}s | "
                   f"llama best {lm['best_s']:.2f}s median {lm['median_s']:.2f}s | ratio "
                   f"best {r['best_s']:.2f} median {r['median_s']:.2f} "
                   f"cpu {r['median_cpu_s']:.2f}")  # fmt: skip
        print(json.dumps({
            "projector": key, "budget": budget, "tokens": n, "language_model": model.name,
            "threads": args.threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "rounds": records, "summary": stats,
        }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
