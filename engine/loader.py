"""Reading a resolved model into torch: the GGUF header cache, weights, tokenizer, EOS ids.

Owns the slow, stateful half of loading. A .gguf is read natively: its config, tokenizer, chat
template and special ids come from the file's own metadata (through transformers' GGUF
readers) and only those small results (tokenizer files, config.json, generation_config.json:
a few MB) are cached, once, under ``<cache root>/gguf-meta/`` keyed by the file's identity and
written atomically (a crash never leaves a cache that looks finished). The torch weights of a
.gguf are dequantised tensor by tensor in memory when first used; no float32 copy is ever
written to disk. Also owns loading a Hugging Face folder, thread settings, checking memory
before torch weights load, and collecting every end-of-turn id.
Does not own deciding what to load or estimating whether it fits (`engine.models`), nor
running it (`engine.runners`), nor the fast path's own weights (`engine.fastpath`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import CorruptModelError, ModelLoadError, UnsupportedModelError
from engine.gguf.header import GgufSummary, read_gguf_summary
from engine.models import (
    MemoryEstimate,
    MemoryPath,
    ModelSpec,
    check_architecture,
    check_gguf_architecture,
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

ProgressFn = Callable[[LoadProgress], None]
MARKER = "hearth-header.json"  # written last inside a finished header cache
LEGACY_MARKER = "hearth-conversion.json"  # marked the old float32 conversions
HEADER_FORMAT = 1  # bump when the cached files change: older header caches are rebuilt
# Tokens chat models use to end a turn, besides the declared EOS ids.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")
log = logging.getLogger(__name__)


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
    ) -> None:
        self.spec = spec
        self.folder = folder  # config + tokenizer files (the header cache for a .gguf)
        self.config = config
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype
        self.context_window = context_window
        self.eos_ids = collect_eos_ids(config, _generation_config(folder), tokenizer)
        self._model: Any = None

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        """The transformers causal LM in eval mode on ``device`` (loaded on first access,
        after checking that its weights fit: InsufficientMemoryError otherwise)."""
        if self._model is None:
            self.check_memory("torch")
            self._model = _load_weights(self.spec, self.config, self.dtype, self.device)
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

    def unload(self) -> None:
        self._model = None


def cache_root() -> Path:
    """$HEARTH_CACHE_DIR, else the platform's user cache dir for "hearth"."""
    env = os.environ.get("HEARTH_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("hearth"))


def gguf_cache_key(path: Path) -> str:
    """Identity of a GGUF file: size + mtime + sha256 of its first and last MiB."""
    st = path.stat()
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with path.open("rb") as f:
        h.update(f.read(2**20))
        f.seek(max(0, st.st_size - 2**20))
        h.update(f.read(2**20))
    return h.hexdigest()[:20]


def header_folder(gguf: Path) -> Path:
    """Where the header cache (config + tokenizer files) of ``gguf`` lives or will live."""
    return cache_root() / "gguf-meta" / f"{gguf.stem}-{gguf_cache_key(gguf)}"


def read_gguf_header(
    gguf: Path,
    progress: ProgressFn,
    *,
    name: str = "",
    summary: GgufSummary | None = None,
    rebuild: bool = False,
) -> Path:
    """Return ``gguf``'s header cache folder, reading the file's metadata on first use (~5 s
    for the bundled model, once; later calls return in milliseconds). ``summary``: its
    already-parsed header, if the caller has it."""
    remove_legacy_conversions()
    target = header_folder(gguf)
    if _is_current(target) and not rebuild:
        return target  # its architecture was checked when it was written (same file identity)
    summary = summary or read_gguf_summary(gguf)
    check_gguf_architecture(summary.architecture, gguf)
    label = name or gguf.name
    progress(LoadProgress("convert", 0.0, f"Reading the tokenizer of {label} (once)"))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        _write_header(gguf, tmp, progress)
        _move_into_place(tmp, target, replace=rebuild or not _is_current(target))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale_headers(gguf, target)
    return target


def _move_into_place(tmp: Path, target: Path, *, replace: bool) -> None:
    """Rename ``tmp`` to ``target``; keep a current ``target`` another process just finished."""
    if target.exists() and replace:  # an older format, or a rebuild asked for
        shutil.rmtree(target, ignore_errors=True)
    try:
        tmp.rename(target)
    except OSError:  # another process finished the same header cache first
        shutil.rmtree(tmp, ignore_errors=True)


def _is_current(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("format") == HEADER_FORMAT


def _write_header(gguf: Path, out: Path, progress: ProgressFn) -> None:
    """Config, generation config and tokenizer read from ``gguf``'s metadata; marker last."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
        progress(LoadProgress("convert", 0.4, "Reading the tokenizer and chat template"))
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except (ValueError, KeyError, NotImplementedError, RuntimeError, OSError) as exc:
        raise UnsupportedModelError(f"transformers could not read {gguf}: {exc}") from exc
    check_architecture(config.model_type, where=str(gguf))
    progress(LoadProgress("convert", 0.9, "Saving the tokenizer for next time"))
    config.architectures = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config.model_type]]
    config.save_pretrained(out)
    GenerationConfig.from_model_config(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker = {"source": str(gguf), "key": out.name, "format": HEADER_FORMAT}
    (out / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    progress(LoadProgress("convert", 1.0, "Tokenizer saved"))


def _remove_stale_headers(gguf: Path, current: Path) -> None:
    """Delete header caches of an older version of the same source file."""
    for folder in current.parent.glob(f"{gguf.stem}-*"):
        if folder == current:
            continue
        try:
            source = json.loads((folder / MARKER).read_text(encoding="utf-8")).get("source")
        except (OSError, ValueError, AttributeError):
            continue
        if source == str(gguf):
            shutil.rmtree(folder, ignore_errors=True)


def remove_legacy_conversions() -> None:
    """Delete the float32 safetensors copies older versions wrote under ``<cache>/gguf/``
    (each ~4x its GGUF's size); runs in milliseconds once they are gone."""
    legacy = cache_root() / "gguf"
    if not legacy.is_dir():
        return
    doomed = [
        d
        for d in legacy.iterdir()
        if d.is_dir() and ((d / LEGACY_MARKER).is_file() or d.name.startswith(".tmp-"))
    ]
    freed = sum(f.stat().st_size for d in doomed for f in d.rglob("*") if f.is_file())
    for folder in doomed:
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        legacy.rmdir()  # only when nothing else is left in it
    if doomed:
        log.info(
            "removed %d legacy float32 GGUF conversion(s) from %s, freeing %.2f GB",
            len(doomed),
            legacy,
            freed / 1e9,
        )


def set_cpu_threads() -> None:
    """One thread per physical core (hyper-threads slow GEMV down), unless the user chose
    (HEARTH_NUM_THREADS, or OMP_NUM_THREADS). On a busy machine fewer threads win: OpenMP
    threads spin-wait for each other, so 2 threads on 2 contended cores ran 3x slower than 1."""
    import psutil
    import torch

    chosen = os.environ.get("HEARTH_NUM_THREADS")
    if chosen and chosen.isdigit() and int(chosen) > 0:
        torch.set_num_threads(int(chosen))
    elif "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1))


def collect_eos_ids(config: Any, generation_config: Any, tokenizer: Any) -> frozenset[int]:
    """Every id that ends a reply: config + generation config + tokenizer EOS + end-of-turn."""
    ids: set[int] = set()
    for source in (config, generation_config):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        ids.update([value] if isinstance(value, int) else list(value or []))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in END_OF_TURN_TOKENS if t in vocab)
    return frozenset(int(i) for i in ids)


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
    report(LoadProgress("resolve", None, f"Finding model {model!r}"))
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
    config, tokenizer = _read_folder(folder, spec, report)
    if spec.kind == "folder":
        ctx = context_window_of(config, context_window)
        check_memory(estimate_memory(config, dtype, ctx), device)
    report(LoadProgress("load", 0.0, f"Loading {spec.name} ({dtype} on {device})"))
    return LoadedModel(
        spec, folder, config, tokenizer, device=device, dtype=dtype, context_window=ctx
    )


def _cheapest_estimate(summary: GgufSummary, ctx: int, dtype: str, device: str) -> MemoryEstimate:
    path: MemoryPath = "fast" if device == "cpu" else "torch"
    return estimate_gguf_memory(summary, ctx, path, dtype)


def _read_folder(folder: Path, spec: ModelSpec, report: ProgressFn) -> tuple[Any, Any]:
    """(config, tokenizer) from ``folder``; a damaged header cache is rebuilt once."""
    try:
        return _load_config(folder), _load_tokenizer(folder)
    except CorruptModelError:
        if spec.kind != "gguf":
            raise
    folder = read_gguf_header(spec.path, report, name=spec.name, rebuild=True)
    return _load_config(folder), _load_tokenizer(folder)


def _load_config(folder: Path) -> Any:
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(folder)
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"could not read the config in {folder}: {exc}") from exc
    check_architecture(config.model_type, where=str(folder))
    return config


def _load_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise CorruptModelError(f"could not read the tokenizer in {folder}: {exc}") from exc


def _generation_config(folder: Path) -> Any:
    if not (folder / "generation_config.json").is_file():
        return None
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(folder)
    except (OSError, ValueError):
        return None  # only used for extra EOS ids


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
            model = AutoModelForCausalLM.from_pretrained(
                where, dtype=getattr(torch, dtype), device_map=device, **extra
            )
    except (OSError, ValueError, RuntimeError) as exc:
        raise CorruptModelError(f"could not read the model in {spec.path}: {exc}") from exc
    except Exception as exc:  # transformers raises many types for unreadable checkpoints
        raise ModelLoadError(f"could not load the model in {spec.path}: {exc}") from exc
    return model.eval()


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
