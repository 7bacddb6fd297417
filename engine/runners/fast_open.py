"""Opening the CPU fast path's runner over a converted graph, with progress.

Owns `fast_runner_or_reason`: for a `.gguf` of an architecture in `engine.arch` it returns an
`OnnxRunner` over the graph `engine.fastpath.cache` converted once (rebuilt once if a cached
graph fails to open), reporting progress while ONNX Runtime prepacks it. Whatever the fast path
cannot handle yields ``None`` plus the reason — never an exception: the caller decides (the
torch path, with a lasting notice). Does not own converting or caching the graph
(`engine.fastpath.cache`) or the forward (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from engine.errors import ModelLoadError
from engine.fastpath import cache
from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.cache import META_FILE, MODEL_FILE, WEIGHTS_FILE, ProgressFn, converted_graph
from engine.fastpath.meta import GraphMeta
from engine.fastpath.weights import PageReleaser
from engine.runners.onnx_runner import OnnxRunner
from engine.types import LoadProgress

TIMING_FILE = "timing.json"  # how long the last session open took, for the next bar
OPEN_BYTES_PER_S = 300e6  # session open (prepacking) rate measured here under load, roughly
log = logging.getLogger("engine.fastpath.cache")  # the name people filter on


def fast_runner_or_reason(
    model: Path | str | Any,
    progress: ProgressFn | None = None,
    threads: int | None = None,
    accuracy: int = ACCURACY_INT8,
    window: int | None = None,
) -> tuple[OnnxRunner | None, str]:
    """(runner, "") or (None, why the fast path cannot run ``model``), with a logged notice.

    ``model`` is a path, or an `engine.loader.LoadedModel` (its source file and context window
    are used, so the fast path honours the window the engine chose). ``accuracy`` 0 builds
    the graph with float activations (exact; slower), for parity tests. ``window`` caps the
    context window (default: the model's, or the LoadedModel's).
    """
    report = progress or (lambda _p: None)
    spec = getattr(model, "spec", None)
    path = Path(spec.path if spec is not None else model)
    window = window or getattr(model, "context_window", None)
    runner, reason = try_fast_runner(path, report, threads, window, accuracy)
    if runner is None:
        notice = f"Fast path unavailable ({reason}); using the float32 torch path"
        log.warning("%s", notice)
        report(LoadProgress("load", None, notice))
    return runner, reason


def try_fast_runner(
    path: Path,
    progress: ProgressFn,
    threads: int | None = None,
    window: int | None = None,
    accuracy: int = ACCURACY_INT8,
) -> tuple[OnnxRunner | None, str]:
    """(runner, "") or (None, why not). Rebuilds once if a cached model fails to load."""
    if path.suffix.lower() != ".gguf" or not path.is_file():
        return None, "the fast path runs .gguf files only"
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None, "onnxruntime is not installed"
    reason = ""
    for attempt in range(2):
        try:
            folder = converted_graph(path, progress, rebuild=attempt > 0, accuracy=accuracy)
            meta = GraphMeta(**json.loads((folder / META_FILE).read_text(encoding="utf-8")))
            return open_runner(folder, meta, progress, threads, path, window), ""
        except Exception as exc:  # any failure here means "not the fast path"
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if _is_unsupported(exc):
                return None, reason
    return None, reason


def open_runner(
    folder: Path,
    meta: GraphMeta,
    progress: ProgressFn,
    threads: int | None,
    source: Path,
    window: int | None,
) -> OnnxRunner:
    """The runner over ``folder``'s graph, with progress while ONNX Runtime opens it.

    Opening a session prepacks every MatMulNBits weight (seconds for a large model) in one
    call that says nothing; it runs on a helper thread while this one reports the time spent
    against the time the last open of this graph took (or an estimate from the weights' size),
    so the bar moves and the ETA is known from the second open on.
    """
    expected = expected_open_s(folder)
    message = "Loading the ONNX Runtime fast path"
    progress(LoadProgress("load", 0.0, message, eta_s=expected))
    start = reported = time.monotonic()
    # The weights ORT has read and prepacked stay mapped beside its packed copy: dropped as
    # it goes (the open's peak) and once more when open (see engine.fastpath.weights).
    pages = PageReleaser(folder / WEIGHTS_FILE)
    with ThreadPoolExecutor(1, "hearth-session") as pool:
        opening = pool.submit(
            OnnxRunner, folder / MODEL_FILE, meta, threads, source=source, window=window
        )
        while True:
            try:
                runner = opening.result(timeout=min(pages.wait_s, cache.REPORT_S))
                break
            except TimeoutError:
                pages.maybe_release()
                now = time.monotonic()
                if now - reported >= cache.REPORT_S:
                    reported, spent = now, now - start
                    eta = max(0.0, expected - spent)
                    fraction = min(0.95, spent / expected)
                    progress(LoadProgress("load", fraction, message, eta_s=eta))
    pages.release()
    record_open_s(folder, time.monotonic() - start)
    return runner


def expected_open_s(folder: Path) -> float:
    """Seconds the last session open of ``folder`` took, else a guess from the weights' size."""
    try:
        return max(0.1, float(json.loads((folder / TIMING_FILE).read_text())["open_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        size = (folder / WEIGHTS_FILE).stat().st_size if (folder / WEIGHTS_FILE).exists() else 0
        return max(0.5, size / OPEN_BYTES_PER_S)


def record_open_s(folder: Path, seconds: float) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still opens; the bar then guesses
        (folder / TIMING_FILE).write_text(json.dumps({"open_s": seconds}), encoding="utf-8")


def _is_unsupported(exc: Exception) -> bool:
    return isinstance(exc, ModelLoadError)
