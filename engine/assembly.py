"""How an `engine.engine.Engine` is put together from a loaded model.

Owns the decisions made when a model opens (and again when it reloads after an idle unload):
which forward implementation runs it and why a slower one was taken (`make_runner`), torch's
thread count, the vision projector beside the model and the refusal line without one
(`open_vision`), the on-disk conversation-cache store and its key (`saved_store`), the notes
`engine.types.ModelInfo` carries (`file_quant`, `kernel_note`), and giving freed memory back
to the system after an unload (`release_memory`). Does not own loading the weights and
tokenizer (`engine.loader`), the runners themselves (`engine.runners`), or serving requests,
the caches' use and the engine's life cycle (`engine.engine`).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

from engine.cache_folders import conversation_cache_dir, gguf_cache_key
from engine.errors import EngineError, UnsupportedModelError
from engine.gguf.header import read_gguf_summary
from engine.gguf.reader import open_gguf
from engine.image_input import NO_PROJECTOR, Vision, find_mmproj
from engine.kernels import build as kernel_build
from engine.loader import LoadedModel
from engine.models import ModelSpec, quant_label
from engine.runners.base import Runner
from engine.runners.kv_store import KVStore, PersistentRunner
from engine.types import LoadProgress


def make_runner(
    loaded: LoadedModel,
    backend: str,
    dtype: str,
    report: Callable[[LoadProgress], None],
    threads: int | None,
) -> tuple[Runner, str]:
    """The forward implementation, and why a slower one was taken ("" when none was).

    - CUDA device ("auto"): the static-cache runner (CUDA-graph decode) on bf16 weights.
    - A .gguf on CPU at dtype "auto": the fast path over the file's own quantised weights;
      when it declines, the float32 torch path with the reason kept for the UI. An explicit
      "onnx" raises instead.
    - Otherwise (a Hugging Face folder, an explicit dtype): the torch path.
    """
    on_cuda = loaded.device.startswith("cuda")
    if on_cuda and backend == "auto":
        from engine.runners.cuda_runner import StaticCacheRunner

        return StaticCacheRunner(loaded.model, context_window=loaded.context_window), ""
    slow_reason = ""
    auto_fast = loaded.spec.kind == "gguf" and not on_cuda and dtype == "auto"
    if backend == "onnx" or (backend == "auto" and auto_fast):
        runner, reason = _fast_runner(loaded, report, threads)
        if runner is not None:
            return runner, ""
        if backend == "onnx":
            raise UnsupportedModelError(f"the fast path cannot run {loaded.spec.name}: {reason}")
        slow_reason = f"the fast path cannot run this file: {reason}"
    elif backend == "auto" and loaded.spec.kind == "folder" and not on_cuda:
        slow_reason = (
            "a Hugging Face folder runs on the float32 torch path; the fast path needs the "
            "model as a .gguf file"
        )
    from engine.runners.torch_runner import TorchRunner

    return TorchRunner(loaded.model, context_window=loaded.context_window), slow_reason


def _fast_runner(
    loaded: LoadedModel, report: Callable[[LoadProgress], None], threads: int | None = None
) -> tuple[Runner | None, str]:
    try:
        from engine.runners.fast_open import fast_runner_or_reason
    except ImportError:  # onnxruntime missing: the fast path is optional
        return None, "onnxruntime is not installed"
    return fast_runner_or_reason(loaded, report, threads)


def set_torch_threads(threads: int | None) -> None:
    """torch's intra-op threads, when torch is loaded (a torch Runner); the fast path's ONNX
    Runtime session took ``threads`` itself, and importing torch just to set it would cost the
    fast path ~1 s and ~250 MB it never uses."""
    if threads is None or "torch" not in sys.modules:
        return
    import torch

    torch.set_num_threads(threads)


def open_vision(
    spec: ModelSpec, runner: Runner, mmproj: str | Path | None
) -> tuple[Vision | None, str]:
    """The vision projector (given, or found beside the model) and the refusal line when
    there is none. A given one that does not fit raises; a found one is only reported."""
    path = Path(mmproj) if mmproj is not None else None
    if path is None and spec.kind == "gguf":
        path = find_mmproj(Path(spec.path))
    if path is None:
        return None, NO_PROJECTOR
    if not hasattr(runner, "add_image"):
        reason = f"the {runner.backend} path cannot read images (the fast path can)"
        if mmproj is not None:
            raise UnsupportedModelError(reason)
        return None, reason
    try:
        reader = open_gguf(spec.path, arrays=False)
        arch = reader.architecture
        width = int(reader.get(f"{arch}.embedding_length") or 0)
        deepstack = int(reader.get(f"{arch}.n_deepstack_layers") or 0)  # Qwen3-VL
        reader.close()
        return Vision(path, arch, width, deepstack=deepstack), ""
    except EngineError as exc:
        if mmproj is not None:
            raise
        return None, str(exc)


def saved_store(loaded: LoadedModel, runner: Runner, budget_bytes: int) -> KVStore | None:
    """The on-disk store of conversation caches, keyed by everything the K/V depend on."""
    spec = loaded.spec
    if budget_bytes <= 0 or spec.kind != "gguf" or not isinstance(runner, PersistentRunner):
        return None

    template = str(getattr(loaded.tokenizer, "chat_template", None) or "")
    key = {
        "model": gguf_cache_key(Path(spec.path)),
        "template": hashlib.sha256(template.encode()).hexdigest()[:16],
        "runner": runner.state_key(),
    }
    return KVStore(conversation_cache_dir(), key, budget_bytes)


def release_memory() -> None:
    """Return freed memory to the system: collect cycles, then ask glibc to give back its
    free heap pages (without malloc_trim a freed session's arenas stay in the RSS)."""
    import ctypes
    import gc

    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def file_quant(spec: ModelSpec) -> str:
    """A GGUF file's own type label ("Q4_K_M"); "" for other sources or when unstated."""
    if spec.kind != "gguf":
        return ""
    summary = spec.summary or read_gguf_summary(spec.path)
    return quant_label(summary.file_type)


def kernel_note(runner: Runner) -> str:
    """Why the fast path runs on ONNX Runtime's kernels alone (Hearth's C kernel does not
    run here: another CPU, no OpenMP, no compiler, turned off), for the status bar; "" where
    it runs or where the runner is not the fast path's."""
    if runner.backend != "onnx":
        return ""
    return kernel_build.unavailable_reason() or ""
