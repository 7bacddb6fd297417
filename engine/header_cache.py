"""The GGUF header cache: a .gguf's config, tokenizer and hyper-parameters, read once.

A .gguf is read natively: its tokenizer, chat template, special ids and torch config come from
the file's own metadata, read in one pass (`engine.gguf.reader`; the tokenizer built by
`engine.gguf.tokenizer`, the config by `engine.arch.hf_config.torch_config`, never through
transformers' GGUF readers, which parsed the metadata again per call: 45-87 s for a Qwen
vocabulary). Only those small results (tokenizer files, config.json, generation_config.json,
the fast path's `HParams` as JSON: a few MB) are cached, once, under ``<cache root>/gguf-meta/``
keyed by the file's identity and written atomically (a crash never leaves a cache that looks
finished). An architecture only the fast path runs (qwen35, gemma4, ...) gets no config.json.
Does not own loading the config or weights from the cache (`engine.loader`), nor deciding what
to load (`engine.models`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.arch.hf_config import torch_config
from engine.arch.hparams import HParams, read_hparams
from engine.arch.tensors import check_tensors
from engine.cache_folders import cache_root, gguf_cache_key, publish_folder, remove_other_versions
from engine.errors import CorruptModelError, UnsupportedModelError
from engine.gguf.consistency import check_consistency
from engine.gguf.header import GgufSummary, read_gguf_summary
from engine.gguf.reader import open_gguf
from engine.gguf.tokenizer import tokenizer_files
from engine.models import check_gguf_architecture
from engine.types import LoadProgress

if TYPE_CHECKING:
    from engine.arch.hparams import HParams

ProgressFn = Callable[[LoadProgress], None]
MARKER = "hearth-header.json"  # written last inside a finished header cache
LEGACY_MARKER = "hearth-conversion.json"  # marked the old float32 conversions
HPARAMS_FILE = "hearth-hparams.json"  # the fast path's HParams; absent: an unknown architecture
# Bump when the cached files change: older header caches are rebuilt.
# 2: config.json carries the fields transformers' GGUF reader misses; hparams saved beside it.
# 3: tokenizer and config built from one pass over the metadata (engine.gguf.tokenizer);
#    config.json absent for an architecture only the fast path runs.
# 4: tokenizer.json's merges as "left right" strings (loads ~20% faster).
# 5: every tensor a layer needs checked, with its shape (engine.arch.tensors): a file cached
#    before is checked once.
HEADER_FORMAT = 5
# Its messages have always been the loader's: keep the name people filter on.
log = logging.getLogger("engine.loader")


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
    """Return ``gguf``'s header cache folder, reading the file's metadata on first use (~1 s
    for a 150k-token vocabulary, once; later calls return in milliseconds). ``summary``: its
    already-parsed header, if the caller has it."""
    remove_legacy_conversions()
    target = header_folder(gguf)
    if _is_current(target) and not rebuild:
        return target  # its architecture was checked when it was written (same file identity)
    summary = summary or read_gguf_summary(gguf)
    check_gguf_architecture(summary.architecture, gguf)
    label = name or gguf.name
    progress(LoadProgress("convert", 0.0, f"Reading the tokenizer of {label} (once)"))
    publish_folder(  # a current one another process just finished is kept, unless rebuilding
        target,
        lambda tmp: _write_header(gguf, tmp, progress),
        keep=lambda t: _is_current(t) and not rebuild,
        source=gguf,
    )
    remove_other_versions(target, gguf, unmarked=True)
    return target


def read_cached_hparams(folder: Path) -> HParams | None:
    """The `HParams` saved in a header cache; None for an architecture the fast path does not
    know (or a Hugging Face folder). CorruptModelError if the file is unreadable."""
    path = folder / HPARAMS_FILE
    if not path.is_file():
        return None

    try:
        return HParams.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise CorruptModelError(f"could not read the hyper-parameters in {folder}: {exc}") from exc


def _is_current(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("format") == HEADER_FORMAT


def _write_header(gguf: Path, out: Path, progress: ProgressFn) -> None:
    """Tokenizer, torch config, generation config and hyper-parameters from one pass over
    ``gguf``'s metadata; marker last. Each step is well under half a second for a 150k-token
    vocabulary, and each reports its fraction of the stage when it starts."""
    step = partial(_report, progress)
    step(0.02, "Reading the vocabulary and settings")
    meta_file = open_gguf(gguf)
    check_consistency(meta_file, gguf)  # settings that disagree with the weights: refused
    meta = meta_file.metadata
    hp = _file_hparams(meta_file, gguf)
    if hp is not None:  # every tensor its layers need, of the shapes its settings give
        check_tensors(meta_file, hp, gguf)
    step(0.3, "Building the tokenizer")
    tokenizer, tokenizer_config = tokenizer_files(
        meta, lambda f: step(0.3 + 0.3 * f, "Building the tokenizer")
    )
    step(0.6, "Saving the tokenizer for next time")
    _write_tokenizer_json(
        out / "tokenizer.json",
        tokenizer,
        lambda f: step(0.6 + 0.25 * f, "Saving the tokenizer for next time"),
    )
    _write_json(out / "tokenizer_config.json", tokenizer_config)
    step(0.85, "Saving the model settings")
    names = {t.name for t in meta_file.tensors}
    config = _torch_config(meta, names, hp, gguf)
    if config is not None:
        _write_json(out / "config.json", config)
    _write_json(out / "generation_config.json", _generation_config(meta))
    if hp is not None:
        _write_json(out / HPARAMS_FILE, hp.to_json())
    if config is None and hp is None:
        raise UnsupportedModelError(
            f"{gguf.name}: neither the fast path nor the torch path can run GGUF architecture "
            f"{meta_file.architecture!r}"
        )
    meta_file.close()  # freed now, not at the cyclic GC's next run (see GgufFile.close)
    marker = {"source": str(gguf), "key": out.name, "format": HEADER_FORMAT}
    (out / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    progress(LoadProgress("convert", 1.0, "Tokenizer saved"))


def _report(progress: ProgressFn, fraction: float, message: str) -> None:
    progress(LoadProgress("convert", fraction, f"{message} (once)"))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _write_tokenizer_json(path: Path, body: dict[str, Any], tick: Callable[[float], None]) -> None:
    """tokenizer.json written in slices of the vocabulary and merges, ticking between them (one
    `json.dumps` of a 150k-token vocabulary is most of a second on a busy machine). Merges are
    written as "left right" strings where no piece holds a space: the `tokenizers` library
    loads those ~20% faster than ["left", "right"] pairs (151k merges: ~0.29 s of CPU instead
    of ~0.37 s for the whole tokenizer, `bench tokenizer-load`)."""
    model = body["model"]
    marks = {"vocab": "\x00vocab\x00", "merges": "\x00merges\x00"}
    text = json.dumps({**body, "model": {**model, **marks}}, ensure_ascii=False)
    vocab, merges = list(model["vocab"].items()), _merge_strings(model["merges"])
    total, done, chunk = max(1, len(vocab) + len(merges)), 0, 32768
    with path.open("w", encoding="utf-8") as f:
        head, rest = text.split(json.dumps(marks["vocab"]), 1)
        middle, tail = rest.split(json.dumps(marks["merges"]), 1)
        f.write(head + "{")
        for i in range(0, len(vocab), chunk):
            part = json.dumps(dict(vocab[i : i + chunk]), ensure_ascii=False)[1:-1]
            f.write(("," if i else "") + part)
            done += len(vocab[i : i + chunk])
            tick(done / total)
        f.write("}" + middle + "[")
        for i in range(0, len(merges), chunk):
            part = json.dumps(merges[i : i + chunk], ensure_ascii=False)[1:-1]
            f.write(("," if i else "") + part)
            done += len(merges[i : i + chunk])
            tick(done / total)
        f.write("]" + tail)


def _merge_strings(merges: list[Any]) -> list[Any]:
    """Merges as "left right" strings, or as given when a piece holds a space (a string could
    then not be split back)."""
    if any(len(pair) != 2 or " " in pair[0] or " " in pair[1] for pair in merges):
        return merges
    return [f"{left} {right}" for left, right in merges]


def _torch_config(
    meta: dict[str, Any], names: set[str], hp: HParams | None, gguf: Path
) -> dict[str, Any] | None:
    """config.json for the exact torch path (`architectures` names the causal LM class), or
    None for an architecture only the fast path runs."""

    try:
        config = torch_config(meta, names, hp)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptModelError(f"{gguf.name}: its model settings are unreadable ({exc})") from exc
    if config is None:
        log.info("%s: no torch config for %s: fast path only", gguf.name, _arch_of(meta))
    return config


def _arch_of(meta: dict[str, Any]) -> str:
    return str(meta.get("general.architecture") or "unknown")


def _generation_config(meta: dict[str, Any]) -> dict[str, Any]:
    """The ids a generation config carries (only its EOS ids are read back: extra stop ids)."""
    ids = {
        f"{name}_token_id": meta.get(f"tokenizer.ggml.{key}_token_id")
        for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"))
    }
    return {k: v for k, v in ids.items() if isinstance(v, int)}


def _file_hparams(reader: Any, gguf: Path) -> HParams | None:
    """The fast path's reading of the file, or None where it does not know the model (then
    the torch config is the metadata's reading alone)."""

    try:
        return read_hparams(reader)
    except UnsupportedModelError as exc:
        log.info("%s: the fast path does not run it (%s)", gguf.name, exc)
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("%s: could not read its hyper-parameters (%s)", gguf.name, exc)
    return None


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
