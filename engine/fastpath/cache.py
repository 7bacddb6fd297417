"""Choosing, converting and caching the CPU fast path for a model.

Owns `build_fast_runner`: for a llama `.gguf` it returns an `OnnxRunner` over a graph converted
once (a few seconds) and cached on disk under ``<cache root>/onnx/``, keyed by the source file's
identity (size, mtime, head/tail hash), the graph layout version and the onnxruntime version, so
a changed source or a new runtime rebuilds it. The cache is written to a temporary folder and
renamed into place, so a crash never leaves a half-written model that looks finished.

Whatever the fast path cannot handle (a Hugging Face folder, another architecture or
quantisation, onnxruntime missing or failing) yields ``None`` plus a notice through the progress
callback and the log — never an exception: the caller keeps the torch path. Does not own the
graph (`engine.fastpath.graph`) or the forward (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from engine.runners.onnx_runner import GraphMeta, OnnxRunner
from engine.types import LoadProgress

ProgressFn = Callable[[LoadProgress], None]
META_FILE = "meta.json"  # written last: its presence marks a finished conversion
MODEL_FILE = "model.onnx"
log = logging.getLogger(__name__)


def build_fast_runner(
    model: Path | str | Any, progress: ProgressFn | None = None, threads: int | None = None
) -> OnnxRunner | None:
    """An `OnnxRunner` for ``model``, converting on first use; None (with a notice) if not.

    ``model`` is a path, or an `engine.loader.LoadedModel` (its source file and context window
    are used, so the fast path honours the window the engine chose).
    """
    report = progress or (lambda _p: None)
    spec = getattr(model, "spec", None)
    path = Path(spec.path if spec is not None else model)
    runner, reason = try_fast_runner(path, report, threads)
    window = getattr(model, "context_window", None)
    if runner is not None and window:
        runner.context_window = min(runner.context_window, int(window))
    if runner is None:
        notice = f"Fast path unavailable ({reason}); using the torch path"
        log.warning("%s", notice)
        report(LoadProgress("load", None, notice))
    return runner


def try_fast_runner(
    path: Path, progress: ProgressFn, threads: int | None = None
) -> tuple[OnnxRunner | None, str]:
    """(runner, "") or (None, why not). Rebuilds once if a cached model fails to load."""
    if path.suffix.lower() != ".gguf" or not path.is_file():
        return None, "it converts single .gguf files only"
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None, "onnxruntime is not installed"
    for attempt in range(2):
        try:
            folder = converted_graph(path, progress, rebuild=attempt > 0)
            meta = GraphMeta(**json.loads((folder / META_FILE).read_text(encoding="utf-8")))
            progress(LoadProgress("load", None, "Loading the ONNX Runtime fast path"))
            return OnnxRunner(folder / MODEL_FILE, meta, threads), ""
        except Exception as exc:  # any failure here means "use torch"
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if _is_unsupported(exc):
                return None, reason
    return None, reason


def _is_unsupported(exc: Exception) -> bool:
    from engine.errors import ModelLoadError

    return isinstance(exc, ModelLoadError)


def graph_folder(path: Path) -> Path:
    """Where the converted graph of ``path`` lives (or will live)."""
    import onnxruntime

    from engine.fastpath.graph import GRAPH_VERSION
    from engine.loader import cache_root, gguf_cache_key

    tag = f"{gguf_cache_key(path)}-g{GRAPH_VERSION}-ort{onnxruntime.__version__}"
    return cache_root() / "onnx" / f"{path.stem}-{tag}"


def converted_graph(path: Path, progress: ProgressFn, rebuild: bool = False) -> Path:
    """The folder holding ``path``'s converted graph and meta, converting when needed."""
    target = graph_folder(path)
    if (target / META_FILE).is_file() and not rebuild:
        return target
    progress(LoadProgress("convert", 0.0, f"Building the fast path for {path.name} (once)"))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        _write_graph(path, tmp, progress)
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:  # another process finished the same conversion first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale(target, path.stem)
    progress(LoadProgress("convert", 1.0, "Fast path built"))
    return target


def _write_graph(path: Path, out: Path, progress: ProgressFn) -> None:
    import gguf
    import onnx

    from engine.fastpath.graph import build_model, read_config

    reader = gguf.GGUFReader(str(path))
    cfg = read_config(reader)

    def on_layer(fraction: float) -> None:
        progress(LoadProgress("convert", 0.9 * fraction, "Repacking quantised weights"))

    model = build_model(reader, on_layer)
    onnx.save(model, str(out / MODEL_FILE))
    kinds = {t.tensor_type.name for t in reader.tensors if t.name.startswith("blk.")}
    quant = "+".join(sorted(k.lower() for k in kinds if k not in ("F32", "F16")))
    meta = GraphMeta(
        n_layers=cfg.n_layers,
        n_kv_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        vocab_size=cfg.vocab,
        context_window=cfg.context,
        dtype=quant or "float32",
    )
    (out / META_FILE).write_text(json.dumps(asdict(meta)), encoding="utf-8")


def _remove_stale(current: Path, stem: str) -> None:
    """Delete older conversions of the same file name (a changed source or runtime)."""
    for other in current.parent.glob(f"{stem}-*"):
        if other != current and other.is_dir() and other.name.count("-") == current.name.count("-"):
            shutil.rmtree(other, ignore_errors=True)
