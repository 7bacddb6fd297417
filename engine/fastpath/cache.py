"""Choosing, converting and caching the CPU fast path for a model.

Owns `fast_runner_or_reason`: for a `.gguf` of an architecture in `engine.arch` it returns an
`OnnxRunner` over a graph converted once — one streaming pass over the file that repacks each
tensor into ``weights.bin`` (about the size of the GGUF; 5- and 6-bit blocks take 8 bits), the
repacking done ahead on a few threads (`engine.fastpath.pipeline`) while the file is written,
with progress in bytes (`BytesProgress`: several reports a second, an ETA once measured) — and
cached on disk under ``<cache root>/onnx/``, keyed by the source file's
identity (size, mtime, head/tail hash), the graph layout version and the onnxruntime version, so
a changed source or a new runtime rebuilds it. The cache is written to a temporary folder and
renamed into place, so a crash never leaves a half-written model that looks finished.

Whatever the fast path cannot handle (a Hugging Face folder, another architecture or
quantisation, onnxruntime missing or failing, too little disk for the conversion:
`disk_shortfall`) yields ``None`` plus the reason — never an
exception: the caller decides (the torch path, with a lasting notice). Does not own the
graph (`engine.fastpath.graph`) or the forward (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

import errno
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from engine.arch.hparams import HParams, check_fast_path, read_hparams
from engine.cache_folders import cache_root, gguf_cache_key, publish_folder, remove_other_versions
from engine.errors import ModelLoadError
from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.dense_op import dense_key, write_dense_layout
from engine.fastpath.expert_op import expert_key, write_layout
from engine.fastpath.graph import GRAPH_VERSION, build_model
from engine.fastpath.kernel_ops import write_mode
from engine.fastpath.matmul_op import write_matrix_layout
from engine.fastpath.meta import EmbeddingSource, GraphMeta
from engine.fastpath.per_layer import per_layer_source
from engine.fastpath.pipeline import RepackPipeline
from engine.fastpath.plan import KernelPlan, is_ffn_matrix
from engine.fastpath.weights import PageReleaser, WeightFile
from engine.gguf.header import summary_of
from engine.gguf.reader import open_gguf
from engine.types import LoadProgress

ProgressFn = Callable[[LoadProgress], None]
META_FILE = "meta.json"  # written last: its presence marks a finished conversion
MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "weights.bin"
REPORT_S = 0.25  # progress at most this often (the app wants at least two a second)
CONVERTED_SIZE_FACTOR = 1.6  # weights.bin over the GGUF's size, K-quant mixes at most (measured)
DISK_MARGIN_BYTES = 256 << 20  # what the graph, metadata and the system keep beside it
log = logging.getLogger(__name__)


def disk_shortfall(source_bytes: int, free_bytes: int, folder: Path, ran_out: bool = False) -> str:
    """Why a conversion of a ``source_bytes`` GGUF cannot fit in ``free_bytes`` ("" when it may).

    ``weights.bin`` takes at least the file's size (1.3-1.6x for K-quant mixes: 5- and 6-bit
    blocks are stored as 8-bit), so less room than the file itself plus a margin is refused
    up front, before minutes of writing; ``ran_out`` words the message for a conversion that
    hit a full disk anyway. The message names the folder and the sizes, so the user knows what
    to free (a full disk used to surface as a bare "[Errno 28]", and the model then opened on
    the float32 torch path at several times the memory).
    """
    needed = int(source_bytes * CONVERTED_SIZE_FACTOR)
    if not ran_out and free_bytes >= source_bytes + DISK_MARGIN_BYTES:
        return ""
    return (
        f"not enough free disk space for the fast path's converted weights: {_gb(free_bytes)} "
        f"free in {folder.parent}, about {_gb(needed)} needed"
    )


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def graph_folder(path: Path, accuracy: int = ACCURACY_INT8) -> Path:
    """Where the converted graph of ``path`` lives (or will live)."""
    import onnxruntime

    plan = KernelPlan.for_file(path, accuracy)  # which kernel runs each matrix, and why
    version = f"g{GRAPH_VERSION}{plan.folder_tag()}a{accuracy}"
    tag = f"{gguf_cache_key(path)}-{version}-ort{onnxruntime.__version__}"
    return cache_root() / "onnx" / f"{path.stem}-{tag}"


def converted_graph(
    path: Path, progress: ProgressFn, rebuild: bool = False, accuracy: int = ACCURACY_INT8
) -> Path:
    """The folder holding ``path``'s converted graph and meta, converting when needed."""
    target = graph_folder(path, accuracy)
    if (target / META_FILE).is_file() and not rebuild:
        return target
    progress(LoadProgress("convert", 0.0, f"Building the fast path for {path.name} (once)"))
    target.parent.mkdir(parents=True, exist_ok=True)
    converted = _converted_source_bytes(path)
    short = disk_shortfall(converted, shutil.disk_usage(target.parent).free, target)
    if short:
        raise ModelLoadError(short)  # not retried: a rebuild would meet the same disk

    def write(tmp: Path) -> None:
        _write_graph(path, tmp, progress, accuracy)

    # Another process that finished the same conversion meanwhile may be reading it: theirs
    # (identical) is kept unless a rebuild was asked for.
    try:
        publish_folder(
            target, write, keep=lambda t: (t / META_FILE).is_file() and not rebuild, source=path
        )
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        free = shutil.disk_usage(target.parent).free
        raise ModelLoadError(disk_shortfall(converted, free, target, True)) from exc

    # Older conversions of this same file only (another file of the same name keeps its own);
    # a graph of another accuracy (the parity tests' float one) stays beside this one.
    def alike(other: Path) -> bool:
        dashes = other.name.count("-") == target.name.count("-")  # not "model-v2-…" of "model"
        return dashes and f"a{accuracy}-ort" in other.name

    remove_other_versions(target, path, unmarked=True, alike=alike)
    progress(LoadProgress("convert", 1.0, "Fast path built"))
    return target


def _converted_source_bytes(path: Path) -> int:
    """The GGUF bytes the conversion repacks into weights.bin: all but the experts, dense MLP
    matrices and projections that stay mapped in the file (`engine.fastpath.expert_op`,
    `.dense_op`, `.matmul_op`)."""

    plan = KernelPlan.for_file(path)
    mapped = plan.mapped_bytes((t.name, t.nbytes) for t in summary_of(path).tensors)
    return path.stat().st_size - mapped


def _write_graph(path: Path, out: Path, progress: ProgressFn, accuracy: int) -> None:
    progress(LoadProgress("convert", 0.01, f"Reading the tensors of {path.name} (once)"))
    import onnx  # about a second on a busy machine: hence the report above

    # One fast pass (duck-types the GGUFReader parts used here); the vocabulary is stepped
    # over: the header cache already read it.
    reader = open_gguf(path, string_arrays=False)
    hp = read_hparams(reader)
    check_fast_path(hp)
    bar = BytesProgress(progress, "convert", "Repacking quantised weights (once)", 0.02, 0.97)
    read = PageReleaser(path, min_interval_s=REPORT_S)  # GGUF pages already repacked

    def tick() -> None:  # half the work is repacking, half writing (scaled to GGUF bytes)
        written = weights.offset * pipeline.total_bytes // max(1, pipeline.packed_bytes)
        bar.tick(pipeline.done_bytes + min(written, pipeline.total_bytes))
        read.maybe_release()

    plan = KernelPlan.for_file(path, accuracy)  # which kernel runs each matrix, and why
    dense = dense_key(path)  # dense MLPs as one op over the mapped file: not repacked
    key = expert_key(reader, hp, path)  # MoE experts as one op over the mapped file, or None
    mapped = plan.matrices  # projections and head likewise (fastpath.matmul_op)
    planned = [t for t in reader.tensors if t.name not in mapped
               and not (dense is not None and is_ffn_matrix(t.name))]  # fmt: skip
    pipeline = RepackPipeline(planned, tick=tick)
    weights = WeightFile(out / WEIGHTS_FILE, pipeline, tick=tick)
    bar.total = 2 * pipeline.total_bytes
    tick()  # the stage is named at once, off zero
    # the mapped matrices' key: the experts' or MLPs' where the file has them, else the file's
    # own (two files with only matrices on the op must not share one: "None" once did)
    own = key or dense or f"{path.stem}-{gguf_cache_key(path)}"
    matrices = (own, mapped) if mapped else None
    delta = plan.delta_op  # DeltaNet decode steps as one native op
    try:
        model = build_model(reader, hp, weights, None, accuracy, expert_key=key, dense_key=dense,
                            matrices=matrices, delta_op=delta,
                            attention_op=plan.attention_op, kv_half=plan.kv_half)  # fmt: skip
    finally:
        pipeline.close()
        weights.close()
        read.release()
    if key is not None:
        write_layout(out, key, reader, hp, hp.spec.activation)
    if dense is not None:
        write_dense_layout(out, dense, reader, hp)
    if matrices is not None:
        write_matrix_layout(out, matrices[0], reader, mapped)
    native_ops = delta or plan.attention_op  # ops the graph has even without kernel matrices
    write_mode(out, exact=accuracy == 0, native_ops=native_ops)  # which library runs them
    progress(LoadProgress("convert", 0.98, "Saving the fast-path graph (once)"))
    onnx.save(model, str(out / MODEL_FILE))
    write_graph_meta(out, reader, hp, per_layer=per_layer_source(reader, hp))  # gemma4 E-models


class BytesProgress:
    """One stage's progress measured in bytes: ``done/total`` mapped into [lo, hi].

    `tick` may be called as often as wanted (on the loading thread only); it reports at most
    every `REPORT_S`, never a lower fraction than before, and with ``eta_s`` from the rate so
    far once there is one to speak of. The first tick always reports, so the stage never sits
    at its starting fraction.
    """

    def __init__(self, report: ProgressFn, stage: str, message: str, lo: float, hi: float) -> None:
        self.report, self.stage, self.message = report, stage, message
        self.lo, self.hi = lo, hi
        self.total = 0
        self._start = time.monotonic()
        self._last_at: float | None = None
        self._last = lo

    def tick(self, done: int) -> None:
        now = time.monotonic()
        if self._last_at is not None and now - self._last_at < REPORT_S:
            return
        share = min(1.0, done / self.total) if self.total > 0 else 0.0
        fraction = max(self._last, self.lo + (self.hi - self.lo) * share)
        elapsed = now - self._start
        eta = None
        if 0 < share < 1 and elapsed > 0.5 and share > 0.02:
            eta = elapsed * (1 - share) / share
        self._last, self._last_at = fraction, now
        self.report(LoadProgress(self.stage, fraction, self.message, eta_s=eta))


def write_graph_meta(
    out: Path, reader: Any, hp: HParams, *, per_layer: dict[str, Any] | None = None
) -> None:
    """``out``'s meta.json: the graph's shapes, hparams and where the token-embedding rows lie
    in the GGUF (the runner reads them from the file, not from the graph). Shared by the chat
    graph and the embedding graph (`engine.fastpath.embedding`)."""
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    meta = GraphMeta(
        n_layers=hp.n_layers,
        n_kv_heads=hp.n_kv_heads,
        head_dim=hp.head_dim,
        vocab_size=hp.vocab,
        context_window=hp.context,
        dtype=tensor_quant_mix(reader),
        hparams=hp.to_json(),
        embedding=EmbeddingSource(
            offset=int(embd.data_offset),
            ggml_type=int(embd.tensor_type),
            rows=int(embd.shape[1]),
            cols=int(embd.shape[0]),
            scale=_embedding_scale(hp),
        ).to_json(),
        per_layer_embedding=per_layer,
    )
    (out / META_FILE).write_text(json.dumps(asdict(meta)), encoding="utf-8")


def _embedding_scale(hp: HParams) -> float:
    """gemma: sqrt(hidden) (as float32); granite: the file's embedding multiplier."""
    if hp.spec.embed_scale:
        return float(np.float32(hp.hidden) ** np.float32(0.5))
    return hp.embedding_scale or 1.0


def tensor_quant_mix(reader: Any) -> str:
    """The weights' quantisations, e.g. "q4_k+q6_k" (float types left out)."""
    kinds = {t.tensor_type.name for t in reader.tensors if t.name.startswith("blk.")}
    quant = "+".join(sorted(k.lower() for k in kinds if k not in ("F32", "F16", "BF16")))
    return quant or "float32"
