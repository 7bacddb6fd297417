"""What a user needs to know about one GGUF model before running it, from its header alone.

Owns `ModelSummary` (name, architecture, quant, size, parameters, context length, RAM estimate,
whether the fast path runs it, the licence it names, and the weights one token reads: a
mixture-of-experts model reads only its routed experts, `weights_per_token`) and building one
from a parsed header (`summarize_header`, shared with the remote reader) or a local file
(`summarize_file`, with a small JSON cache keyed by path, size and mtime so listing a models
folder does not re-parse every vocabulary).
Does not own parsing the header (`engine.gguf.header`), the memory model (`engine.models`) or
reading a header over HTTP (`engine.hub.remote_header`). Torch-free: the app imports it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.arch import ARCHS
from engine.cache_folders import cache_root
from engine.errors import CorruptModelError, NotGGUFError
from engine.gguf.header import GgufSummary, read_gguf_summary
from engine.gguf.reader import GGUF_MAGIC
from engine.gguf.repack import fast_path_supports
from engine.models import (
    DEFAULT_CONTEXT_CAP,
    MemoryPath,
    choose_dtype,
    estimate_gguf_memory,
    quant_label,
)

# The context the RAM estimate plans for: the engine's default window (the model's own limit,
# capped), so the figure matches what loading the model with default settings needs.
SUMMARY_CACHE_FORMAT = 4  # 2: the weights read per token; 3: vision projectors, widths;
# 4: RAM estimates with the float16 K/V cache where the kernel's attention runs
PROJECTOR_ARCH = "clip"  # general.architecture of an mmproj (a vision projector)
# Tensors a token reads one row of (a lookup, not a matrix product): the input embedding when
# the file has its own output matrix, and Gemma's per-layer embeddings (E2B/E4B).
_LOOKUP_TABLES = ("token_embd.weight", "per_layer_token_embd.weight")


@dataclass(frozen=True)
class ModelSummary:
    """One GGUF model, described from its header (no weights read)."""

    path: str  # a local path or a URL
    name: str
    architecture: str
    quantization: str  # e.g. "Q4_K_M"; "" when the file does not say
    size_bytes: int
    parameters: int
    context_length: int  # the model's trained context (0 when the file does not say)
    ram_estimate_bytes: int  # weights + KV cache for the default window + overhead
    fast_path: bool
    fast_path_reason: str | None = None  # why not, when fast_path is False
    last_used: float | None = None  # seconds since the epoch; None: never (or not tracked)
    source: str = "hearth"  # "hearth" | "lmstudio" | "gpt4all" | "ollama" | "hub" | "file"
    # What one decoded token reads: only the routed experts of a mixture-of-experts model, no
    # lookup tables. 0: not known (a summary from an older cache), read as the whole file.
    active_bytes: int = 0
    active_parameters: int = 0
    expert_count: int = 0  # experts per layer (0: a dense model)
    expert_used_count: int = 0  # experts each token is routed to
    licence: str = ""  # the file's general.license ("apache-2.0"), "" when it names none
    unreadable: str = ""  # why the header could not be read; "" for a usable model
    # One token's embedding width: the model's embedding_length; for a vision projector
    # (architecture "clip") the width it projects images to. 0: the file does not say.
    embedding_width: int = 0
    # The vision projector paired with this model on disk (`engine.hub.library`): "" if none.
    mmproj: str = ""

    @property
    def is_projector(self) -> bool:
        """A vision projector (mmproj), never a chat model."""
        return self.architecture == PROJECTOR_ARCH

    @property
    def bytes_per_token(self) -> int:
        """Bytes of file weights one decoded token reads (sets the fast path's speed)."""
        return self.active_bytes or self.size_bytes

    @property
    def parameters_per_token(self) -> int:
        return self.active_parameters or self.parameters

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSummary:
        return cls(**data)

    @classmethod
    def unreadable_file(cls, path: str, size_bytes: int, source: str, reason: str) -> ModelSummary:
        """A file listed (so the user sees it and can delete it) but not usable: ``reason``."""
        return cls(
            path=path,
            name=Path(path).stem,
            architecture="",
            quantization="",
            size_bytes=size_bytes,
            parameters=0,
            context_length=0,
            ram_estimate_bytes=0,
            fast_path=False,
            fast_path_reason=reason,
            source=source,
            unreadable=reason,
        )


def summarize_header(
    header: GgufSummary, *, path: str, size_bytes: int, fallback_name: str, source: str
) -> ModelSummary:
    """A `ModelSummary` from a parsed header (local or remote); CorruptModelError, naming
    ``path``, when its values make no sense (a NaN head count, an impossible shape)."""
    try:
        return _summarize_header(
            header, path=path, size_bytes=size_bytes, fallback_name=fallback_name, source=source
        )
    except CorruptModelError as exc:
        raise CorruptModelError(f"{path}: {exc}") from None
    except (ArithmeticError, ValueError, TypeError, KeyError, IndexError) as exc:
        # Values the parser accepted but the estimates trip on (issue 22 A4): a clean
        # refusal naming the file, never a traceback.
        raise CorruptModelError(f"{path} has a GGUF header Hearth cannot read: {exc}") from None


def _summarize_header(
    header: GgufSummary, *, path: str, size_bytes: int, fallback_name: str, source: str
) -> ModelSummary:
    if header.architecture == PROJECTOR_ARCH:
        return _summarize_projector(
            header, path=path, size_bytes=size_bytes, fallback_name=fallback_name, source=source
        )

    reason = fast_path_refusal(header)
    active_bytes, active_parameters = weights_per_token(header)
    context = header.arch_int("context_length") or 0
    window = min(context, DEFAULT_CONTEXT_CAP) if context else DEFAULT_CONTEXT_CAP
    memory_path: MemoryPath = "fast" if reason is None else "torch"
    estimate = estimate_gguf_memory(header, window, memory_path, choose_dtype("float32", "cpu"))
    return ModelSummary(
        path=path,
        name=header.name or fallback_name,
        architecture=header.architecture,
        quantization=quant_label(header.file_type) or _dominant_type(header),
        size_bytes=size_bytes,
        parameters=sum(t.n_elements for t in header.tensors),
        context_length=context,
        ram_estimate_bytes=estimate.total,
        fast_path=reason is None,
        fast_path_reason=reason,
        source=source,
        active_bytes=active_bytes,
        active_parameters=active_parameters,
        expert_count=header.arch_int("expert_count") or 0,
        expert_used_count=header.arch_int("expert_used_count") or 0,
        licence=str(header.metadata.get("general.license", "") or "").strip(),
        embedding_width=header.arch_int("embedding_length") or 0,
    )


def _summarize_projector(
    header: GgufSummary, *, path: str, size_bytes: int, fallback_name: str, source: str
) -> ModelSummary:
    """A vision projector: no context, no KV cache, never run as a chat model; its weights
    are held beside the model's while it reads images."""
    width = header.metadata.get("clip.vision.projection_dim")
    kind = header.metadata.get("clip.projector_type") or "vision"
    return ModelSummary(
        path=path,
        name=header.name or fallback_name,
        architecture=PROJECTOR_ARCH,
        quantization=quant_label(header.file_type) or _dominant_type(header),
        size_bytes=size_bytes,
        parameters=sum(t.n_elements for t in header.tensors),
        context_length=0,
        ram_estimate_bytes=size_bytes,
        fast_path=False,
        fast_path_reason=f"a {kind} vision projector (mmproj), read beside its model",
        source=source,
        licence=str(header.metadata.get("general.license", "") or "").strip(),
        embedding_width=int(width) if isinstance(width, int) and width > 0 else 0,
    )


def weights_per_token(header: GgufSummary) -> tuple[int, int]:
    """(bytes, parameters) of the weights one decoded token reads. Memory must hold the whole
    file, but a mixture-of-experts layer runs only ``expert_used_count`` of its
    ``expert_count`` experts (the ``*_exps`` tensors) per token, and a lookup table (the input
    embedding beside a separate output matrix) gives one row."""
    experts = header.arch_int("expert_count") or 0
    used = header.arch_int("expert_used_count") or 0
    routed = min(used, experts) / experts if experts > 0 and used > 0 else 1.0
    names = {t.name for t in header.tensors}
    lookups = {n for n in _LOOKUP_TABLES if n != "token_embd.weight" or "output.weight" in names}
    nbytes = elements = 0.0
    for t in header.tensors:
        if t.name in lookups:
            continue
        share = routed if "_exps." in t.name else 1.0
        nbytes += t.nbytes * share
        elements += t.n_elements * share
    return int(nbytes), int(elements)


def decode_bytes_of_file(path: Path | str) -> int:
    """Bytes of weights one decoded token reads from the GGUF at ``path`` (its summary is
    cached): what a measured decode speed is divided by (`engine.hub.fit`). The file's size
    when its header cannot be summarised (a speed record is never worth an error)."""
    try:
        return summarize_file(path).bytes_per_token
    except Exception:  # a new architecture's header the estimate trips on: still a figure
        return Path(path).stat().st_size


def fast_path_refusal(header: GgufSummary) -> str | None:
    """Why the fast path cannot run this model, or None when it can (judged from the header:
    architecture, rotary width and matrix types, as `engine.arch.hparams.check_fast_path` and
    `engine.gguf.repack` refuse them). The rope scaling type is a string the header summary
    skips; a file with an unsupported one is refused later, at load, and runs on torch."""

    if header.architecture not in ARCHS:
        return f"the fast path does not know the architecture {header.architecture!r}"
    hidden = header.arch_int("embedding_length") or 0
    heads = header.arch_int("attention.head_count") or 1
    head_dim = header.arch_int("attention.key_length") or hidden // heads
    rope_dim = header.arch_int("rope.dimension_count") or head_dim
    if rope_dim % 16 or rope_dim > head_dim:
        return f"the fast path cannot rotate {rope_dim} of {head_dim} head dimensions"
    odd = sorted(
        {_type_name(t.ggml_type) for t in header.tensors if len(t.shape) >= 2}
        - {n for n in _type_names() if fast_path_supports(n)}
    )
    if odd:
        return f"the fast path cannot repack {', '.join(odd)} weights"
    return None


def summarize_file(
    path: Path | str, *, source: str = "file", use_cache: bool = True
) -> ModelSummary:
    """Describe a local GGUF file from its header (NotGGUFError, CorruptModelError when it is
    not a complete GGUF). Cached by path, size and mtime."""
    path = Path(os.path.abspath(Path(path).expanduser()))  # a link keeps its own path
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    cached = _read_cache().get(key) if use_cache else None
    if cached is not None:
        with contextlib.suppress(TypeError, ValueError):
            return ModelSummary.from_dict({**cached, "source": source})
    check_magic(path)
    header = read_gguf_summary(path)
    summary = summarize_header(
        header, path=str(path), size_bytes=st.st_size, fallback_name=path.stem, source=source
    )
    if use_cache:
        _write_cache_entry(key, summary)
    return summary


def check_magic(path: Path) -> None:
    """NotGGUFError unless ``path`` starts with the GGUF magic."""
    with path.open("rb") as f:
        head = f.read(4)
    if head != GGUF_MAGIC:
        raise NotGGUFError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")


def _dominant_type(header: GgufSummary) -> str:
    """The GGML type holding most matrix bytes: a quant label for files without file_type."""
    weights: dict[str, int] = {}
    for t in header.tensors:
        if len(t.shape) >= 2:
            weights[_type_name(t.ggml_type)] = weights.get(_type_name(t.ggml_type), 0) + t.nbytes
    return max(weights, key=lambda k: weights[k]) if weights else ""


def _type_name(ggml_type: int) -> str:
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(ggml_type).name
    except ValueError:
        return str(ggml_type)


def _type_names() -> list[str]:
    from gguf import GGMLQuantizationType

    return [t.name for t in GGMLQuantizationType]


def _cache_file() -> Path:

    return cache_root() / "hub" / "summaries.json"


def _read_cache() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != SUMMARY_CACHE_FORMAT:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _write_cache_entry(key: str, summary: ModelSummary) -> None:
    """Add one entry, dropping entries of files that are gone; written atomically."""
    path = key.split("|")[0]
    entries = {
        k: v
        for k, v in _read_cache().items()
        if k.split("|")[0] != path and Path(k.split("|")[0]).exists()  # drop stale versions
    }
    entries[key] = summary.to_dict()
    target = _cache_file()
    with contextlib.suppress(OSError):  # a cache that cannot be written only costs speed
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": SUMMARY_CACHE_FORMAT, "entries": entries}, f)
        os.replace(tmp, target)
