"""Reading a resolved model into torch: config, tokenizer, weights, EOS ids.

Owns the slow, stateful half of loading. A .gguf's config, tokenizer and hyper-parameters come
from its header cache (`engine.header_cache`, re-exported here); its torch weights are
dequantised tensor by tensor in memory when first used (no float32 copy is ever written to
disk) and its rotary frequencies set to the file's where a config cannot say them
(`engine.arch.hf_config.patch_rotary`). Also owns loading a Hugging Face folder, thread
settings, checking memory before torch weights load, and collecting every end-of-turn id.
Does not own deciding what to load or estimating whether it fits (`engine.models`), nor
running it (`engine.runners`), nor the fast path's own weights (`engine.fastpath`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import settings
from engine.arch.hf_config import patch_rotary
from engine.cache_folders import cache_root, gguf_cache_key
from engine.cpus import usable_cores
from engine.errors import CorruptModelError, ModelLoadError, UnsupportedModelError
from engine.gguf.header import GgufSummary, read_gguf_summary
from engine.harmony import END as HARMONY_END_OF_MESSAGE
from engine.harmony import harmony_turn_end_ids, is_harmony
from engine.header_cache import (
    HEADER_FORMAT,
    HPARAMS_FILE,
    LEGACY_MARKER,
    MARKER,
    header_folder,
    read_cached_hparams,
    read_gguf_header,
    remove_legacy_conversions,
)
from engine.models import (
    MemoryEstimate,
    MemoryPath,
    ModelSpec,
    check_architecture,
    check_memory,
    choose_device,
    choose_dtype,
    context_window_of,
    context_window_within,
    estimate_gguf_memory,
    estimate_memory,
    resolve_model,
)
from engine.types import LoadProgress

if TYPE_CHECKING:
    from engine.arch.hparams import HParams

__all__ = [  # the header cache's names, re-exported for callers that imported them from here
    "HEADER_FORMAT",
    "LEGACY_MARKER",
    "MARKER",
    "LoadedModel",
    "cache_root",
    "gguf_cache_key",
    "header_folder",
    "load_model",
    "read_gguf_header",
    "remove_legacy_conversions",
]
ProgressFn = Callable[[LoadProgress], None]
# Tokens chat models use to end a turn, besides the declared EOS ids.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")


class LoadedModel:
    """A resolved, checked model: tokenizer and config loaded; torch weights on first use.

    The weights load lazily (``model``) so a fast-path Runner that brings its own weights does
    not pay the time and memory of torch weights it never runs.
    """

    def __init__(
        self,
        spec: ModelSpec,
        folder: Path,
        config: Any,
        tokenizer: Any,
        *,
        device: str,
        dtype: str,
        context_window: int,
        hparams: HParams | None = None,
    ) -> None:
        self.spec = spec
        self.folder = folder  # config + tokenizer files (the header cache for a .gguf)
        self._config = config  # LAZY_CONFIG: read on first use (see `config`)
        self.tokenizer = tokenizer
        self.hparams = hparams  # a .gguf the fast path knows: its hyper-parameters
        self.device = device
        self.dtype = dtype
        self.context_window = context_window
        eos_source = _plain_config(folder) if config is LAZY_CONFIG else config
        self.eos_ids = collect_eos_ids(eos_source, _generation_config(folder), tokenizer)
        self._model: Any = None

    @property
    def config(self) -> Any:
        """The transformers config (None for an architecture only the fast path runs). For a
        GGUF the fast path runs it is read on first use: the fast path needs none, and
        transformers' config classes import torch.distributed (~1-2 s of every later open)."""
        if self._config is LAZY_CONFIG:
            self._config = _load_config(self.folder)
        return self._config

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        """The transformers causal LM in eval mode on ``device`` (loaded on first access,
        after checking that its weights fit: InsufficientMemoryError otherwise)."""
        if self._model is None:
            if self.config is None:
                raise UnsupportedModelError(
                    f"{self.spec.name}: the exact (torch) path cannot run GGUF architecture "
                    f"{self.hparams.arch if self.hparams else '?'!r}; it runs on the fast path only"
                )
            self.check_memory("torch")
            model = _load_weights(self.spec, self.config, self.dtype, self.device)
            if self.hparams is not None:
                _patch_rotary(model, self.hparams, self.context_window, self.spec)
            self._model = model
        return self._model

    def memory_estimate(self, path: MemoryPath = "torch") -> MemoryEstimate:
        """What running on ``path`` needs (only a .gguf has a "fast" path)."""
        summary = self.spec.summary if self.spec.kind == "gguf" else None
        if summary is None:
            return estimate_memory(self.config, self.dtype, self.context_window)
        return estimate_gguf_memory(summary, self.context_window, path, self.dtype)

    def check_memory(
        self, path: MemoryPath = "torch", *, available: int | None = None
    ) -> MemoryEstimate:
        """Raise InsufficientMemoryError unless ``path`` fits now (call before choosing it)."""
        return check_memory(self.memory_estimate(path), self.device, available=available)


def set_cpu_threads() -> None:
    """One thread per physical core (hyper-threads slow GEMV down), unless the user chose
    (HEARTH_NUM_THREADS, or OMP_NUM_THREADS). On a busy machine fewer threads win: OpenMP
    threads spin-wait for each other, so 2 threads on 2 contended cores ran 3x slower than 1."""
    import torch

    chosen = settings.NUM_THREADS.count()
    if chosen:
        torch.set_num_threads(chosen)
    elif "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(usable_cores())


def collect_eos_ids(config: Any, generation_config: Any, tokenizer: Any) -> frozenset[int]:
    """Every id that ends a reply: config + generation config + tokenizer EOS + end-of-turn."""
    ids: set[int] = set()
    for source in (config, generation_config):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        ids.update([value] if isinstance(value, int) else list(value or []))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    found = {t: _token_id(tokenizer, t) for t in (*END_OF_TURN_TOKENS, HARMONY_END_OF_MESSAGE)}
    ids.update(i for t, i in found.items() if t in END_OF_TURN_TOKENS and i is not None)
    if is_harmony(tokenizer):
        # gpt-oss: <|end|> closes one message (the thinking), <|return|>/<|call|> the turn.
        ids.discard(found[HARMONY_END_OF_MESSAGE])
        ids.update(harmony_turn_end_ids(tokenizer))
    return frozenset(int(i) for i in ids)


def _token_id(tokenizer: Any, token: str) -> int | None:
    """``token``'s id in the vocabulary, or None: one lookup, not a copy of the vocabulary
    (``get_vocab()`` builds a 151k-entry dict)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    lookup = backend.token_to_id if backend is not None else tokenizer.get_vocab().get
    found = lookup(token)
    return None if found is None else int(found)


def load_model(
    model: str,
    *,
    dtype: str = "auto",
    device: str = "auto",
    context_window: int | None = None,
    progress: ProgressFn | None = None,
) -> LoadedModel:
    """Resolve, check memory, and load config + tokenizer (torch weights load on first use).

    For a .gguf the memory check here is for the cheapest path that could run it on
    ``device`` (the fast path on CPU); `LoadedModel.model` checks torch's needs before it
    loads, and callers choosing a path can call `LoadedModel.check_memory(path)` first.
    """
    report = progress or (lambda _p: None)
    # The file's or folder's name, not the path the user chose it by (the status bar shows
    # this line whole; the path is in the app's tooltip and the Models window).
    report(LoadProgress("resolve", None, f"Finding {Path(model).name or model}"))
    spec = resolve_model(model)
    device = choose_device(device)
    dtype = choose_dtype(dtype, device)
    if spec.kind == "gguf":
        summary = spec.summary or read_gguf_summary(spec.path)
        ctx = context_window_within(summary.arch_int("context_length"), context_window)
        check_memory(_cheapest_estimate(summary, ctx, dtype, device), device)
        folder = read_gguf_header(spec.path, report, name=spec.name, summary=summary)
    else:
        folder = spec.path
    report(LoadProgress("load", None, f"Loading the tokenizer of {spec.name}"))
    config, tokenizer, hparams = _read_folder(folder, spec, report)
    if spec.kind == "folder":
        ctx = context_window_of(config, context_window)
        check_memory(estimate_memory(config, dtype, ctx), device)
    report(LoadProgress("load", 0.0, f"Loading {spec.name} ({dtype} on {device})"))
    return LoadedModel(
        spec,
        folder,
        config,
        tokenizer,
        device=device,
        dtype=dtype,
        context_window=ctx,
        hparams=hparams,
    )


def _cheapest_estimate(summary: GgufSummary, ctx: int, dtype: str, device: str) -> MemoryEstimate:
    path: MemoryPath = "fast" if device == "cpu" else "torch"
    return estimate_gguf_memory(summary, ctx, path, dtype)


def _read_folder(
    folder: Path, spec: ModelSpec, report: ProgressFn
) -> tuple[Any, Any, HParams | None]:
    """(config, tokenizer, hparams) from ``folder``; a damaged header cache is rebuilt once.
    A GGUF the fast path knows (its hyper-parameters are cached) gets `LAZY_CONFIG`."""
    try:
        return _config_tokenizer_hparams(folder, spec)
    except CorruptModelError:
        if spec.kind != "gguf":
            raise
    folder = read_gguf_header(spec.path, report, name=spec.name, rebuild=True)
    return _config_tokenizer_hparams(folder, spec)


# The config of a GGUF the fast path runs, read only when the torch path is asked for.
LAZY_CONFIG: Any = object()


def _config_tokenizer_hparams(folder: Path, spec: ModelSpec) -> tuple[Any, Any, HParams | None]:
    hparams = read_cached_hparams(folder)
    lazy = spec.kind == "gguf" and hparams is not None and (folder / "config.json").is_file()
    config = LAZY_CONFIG if lazy else _load_config(folder)
    return config, load_tokenizer(folder), hparams


def _plain_config(folder: Path) -> Any:
    """config.json's ``eos_token_id`` without transformers (what `collect_eos_ids` reads)."""
    import json
    from types import SimpleNamespace

    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"could not read the config in {folder}: {exc}") from exc
    return SimpleNamespace(
        eos_token_id=data.get("eos_token_id") if isinstance(data, dict) else None
    )


def _load_config(folder: Path) -> Any:
    """The transformers config; None for a header cache without one (a GGUF architecture only
    the fast path runs: `LoadedModel.model` then says the torch path cannot run it)."""
    from transformers import AutoConfig

    if not (folder / "config.json").is_file() and (folder / HPARAMS_FILE).is_file():
        return None
    try:
        config = AutoConfig.from_pretrained(folder)
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"could not read the config in {folder}: {exc}") from exc
    check_architecture(config.model_type, where=str(folder))
    return config


def load_tokenizer(folder: Path) -> Any:
    if (folder / MARKER).is_file() and (folder / "tokenizer.json").is_file():
        return _load_built_tokenizer(folder)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise CorruptModelError(f"could not read the tokenizer in {folder}: {exc}") from exc


def _load_built_tokenizer(folder: Path) -> Any:
    """The tokenizer a header cache holds, exactly as `engine.gguf.tokenizer` wrote it, as
    the engine's own `EngineTokenizer` over tokenizer.json (~0.3 s of CPU for 151k tokens;
    transformers' TokenizersBackend gives the same tokenizer but importing transformers costs
    ~1.5 s, and AutoTokenizer rebuilds it through a model-specific class: 2-6 s). Loading
    it on another thread while the runner is built gains nothing: `tokenizers` holds the GIL
    while it parses (measured)."""
    from engine.tokenizer_runtime import EngineTokenizer

    try:
        return EngineTokenizer.from_folder(folder)
    except Exception as exc:  # the tokenizers library raises a bare Exception on bad JSON
        raise CorruptModelError(f"could not read the tokenizer in {folder}: {exc}") from exc


def _generation_config(folder: Path) -> Any:
    """generation_config.json's ``eos_token_id`` (only its extra EOS ids are used), read as
    plain JSON: transformers' GenerationConfig would import transformers for one field."""
    import json
    from types import SimpleNamespace

    try:
        data = json.loads((folder / "generation_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    eos = data.get("eos_token_id") if isinstance(data, dict) else None
    valid = isinstance(eos, int) or (isinstance(eos, list) and all(isinstance(i, int) for i in eos))
    return SimpleNamespace(eos_token_id=eos if valid else None)


def _load_weights(spec: ModelSpec, config: Any, dtype: str, device: str) -> Any:
    """Torch weights: a folder's checkpoint, or a .gguf dequantised tensor by tensor in memory
    (transformers' GGUF loader; nothing is written to disk)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    if device == "cpu":
        set_cpu_threads()
    where = spec.path.parent if spec.kind == "gguf" else spec.path
    extra = {"gguf_file": spec.path.name, "config": config} if spec.kind == "gguf" else {}
    try:
        with _quiet(hf_logging):
            model: Any = AutoModelForCausalLM.from_pretrained(
                where, dtype=getattr(torch, dtype), device_map=device, **extra
            )
    except (OSError, ValueError, RuntimeError) as exc:
        raise CorruptModelError(f"could not read the model in {spec.path}: {exc}") from exc
    except Exception as exc:  # transformers raises many types for unreadable checkpoints
        raise ModelLoadError(f"could not load the model in {spec.path}: {exc}") from exc
    return model.eval()


def _patch_rotary(model: Any, hp: HParams, window: int, spec: ModelSpec) -> None:
    """The file's rotary frequencies where its config cannot hold them (llama3, longrope)."""

    try:
        patch_rotary(model, hp, window)
    except ValueError as exc:
        raise ModelLoadError(f"could not set the rotary embedding of {spec.path}: {exc}") from exc


@contextlib.contextmanager
def _quiet(hf_logging: Any) -> Any:
    """Silence transformers' progress bars while loading (the app shows its own progress)."""
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
