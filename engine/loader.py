"""Reading a resolved model into torch: the GGUF conversion cache, weights, tokenizer, EOS ids.

Owns the slow, stateful half of loading: converting a .gguf ONCE into a safetensors +
tokenizer + config folder under the user cache dir (keyed by the file's identity; written
atomically, so a crash mid-conversion never leaves a broken cache), loading weights and
tokenizer onto the chosen device/dtype, thread settings, and collecting every end-of-turn id.
Does not own deciding what to load or whether it fits (`engine.models`), nor running it
(`engine.runners.torch_runner`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import CorruptModelError, ModelLoadError, UnsupportedModelError
from engine.gguf.header import read_gguf_summary
from engine.models import (
    ModelSpec,
    check_architecture,
    check_gguf_architecture,
    check_memory,
    choose_device,
    choose_dtype,
    context_window_of,
    resolve_model,
)
from engine.types import LoadProgress

ProgressFn = Callable[[LoadProgress], None]
MARKER = "hearth-conversion.json"  # written last inside a finished conversion
# Tokens chat models use to end a turn, besides the declared EOS ids.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")


class LoadedModel:
    """A resolved, checked model: tokenizer and config loaded; torch weights on first use.

    The weights load lazily (``model``) so a fast-path Runner that brings its own weights does
    not pay ~7 s and the float32 copy's memory for torch weights it never runs.
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
        self.folder = folder  # the Hugging Face folder (the conversion cache for a .gguf)
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
        """The transformers causal LM in eval mode on ``device`` (loaded on first access)."""
        if self._model is None:
            self._model = _load_weights(self.folder, self.dtype, self.device)
        return self._model

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


def converted_folder(gguf: Path) -> Path:
    """Where the conversion of ``gguf`` lives (or will live)."""
    return cache_root() / "gguf" / f"{gguf.stem}-{gguf_cache_key(gguf)}"


def convert_gguf(gguf: Path, progress: ProgressFn) -> Path:
    """Return a safetensors folder holding ``gguf``'s weights, converting on first use (~30 s)."""
    summary = read_gguf_summary(gguf)  # cheap; catches truncation before transformers does
    check_gguf_architecture(summary.architecture, gguf)
    target = converted_folder(gguf)
    if (target / MARKER).is_file():
        return target
    progress(LoadProgress("convert", 0.0, f"Converting {gguf.name} (once; later loads are fast)"))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        _write_conversion(gguf, tmp, summary.architecture, progress)
        try:
            tmp.rename(target)
        except OSError:  # another process finished the same conversion first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale_conversions(gguf, target)
    return target


def _remove_stale_conversions(gguf: Path, current: Path) -> None:
    """Delete conversions of an older version of the same file (each is ~4x the GGUF's size)."""
    for folder in current.parent.glob(f"{gguf.stem}-*"):
        marker = folder / MARKER
        if folder == current or not marker.is_file():
            continue
        try:
            source = json.loads(marker.read_text(encoding="utf-8")).get("source")
        except (OSError, ValueError):
            continue
        if source == str(gguf):
            shutil.rmtree(folder, ignore_errors=True)


def _write_conversion(gguf: Path, out: Path, arch: str, progress: ProgressFn) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        progress(LoadProgress("convert", 0.3, "Dequantizing weights"))
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
    except (ValueError, KeyError, NotImplementedError, RuntimeError) as exc:
        raise UnsupportedModelError(f"transformers could not read {gguf}: {exc}") from exc
    progress(LoadProgress("convert", 0.8, "Writing the safetensors cache"))
    # The GGUF quantizer stays attached, so save_pretrained refuses: save tensors ourselves.
    # Tied tensors share storage, which save_file rejects: keep the first name of each.
    state, seen = {}, set()
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        state[name] = tensor.detach().contiguous()
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]  # ONNX builders need it
    config["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker = {"source": str(gguf), "key": out.name, "architecture": arch}
    (out / MARKER).write_text(json.dumps(marker), encoding="utf-8")


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
    """Resolve, convert if needed, check memory, and load weights + tokenizer."""
    report = progress or (lambda _p: None)
    report(LoadProgress("resolve", None, f"Finding model {model!r}"))
    spec = resolve_model(model)
    folder = convert_gguf(spec.path, report) if spec.kind == "gguf" else spec.path
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    check_architecture(config.model_type, where=str(folder))
    device = choose_device(device)
    dtype = choose_dtype(dtype, device)
    ctx = context_window_of(config, context_window)
    check_memory(config, dtype, device, ctx)
    report(LoadProgress("load", 0.0, f"Loading {spec.name} ({dtype} on {device})"))
    tokenizer = _load_tokenizer(folder)
    return LoadedModel(
        spec, folder, config, tokenizer, device=device, dtype=dtype, context_window=ctx
    )


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


def _load_weights(folder: Path, dtype: str, device: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    if device == "cpu":
        set_cpu_threads()
    try:
        with _quiet(hf_logging):
            model = AutoModelForCausalLM.from_pretrained(
                folder, dtype=getattr(torch, dtype), device_map=device
            )
    except (OSError, ValueError, RuntimeError) as exc:
        raise CorruptModelError(f"could not read the model in {folder}: {exc}") from exc
    except Exception as exc:  # transformers raises many types for unreadable checkpoints
        raise ModelLoadError(f"could not load the model in {folder}: {exc}") from exc
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
