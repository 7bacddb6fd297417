"""The models folder, and the GGUFs other apps on this machine already downloaded.

Owns where Hearth keeps downloaded models (`models_dir`: ``<data dir>/models``, the data dir of
`app.system.paths`; ``HEARTH_MODELS_DIR`` overrides), listing them with their summaries and
when each was last used, deleting one (only inside Hearth's folder), and finding GGUFs that
LM Studio, GPT4All and Ollama keep in their usual places, offered in place, never copied.
A vision projector (an mmproj GGUF, general.architecture "clip") is never listed as a model:
it is reported as the ``mmproj`` of the model it pairs with — in the same folder by the rule
of `engine.hub.pairing`, or for Ollama by the manifest's projector layer (`projector_for`
answers for one model file, as the engine asks when it loads one).
Does not own downloading (`engine.hub.download`) or reading headers (`engine.hub.summary`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from engine import settings
from engine.errors import EngineError, InvalidParamsError, ModelLoadError
from engine.hub.names import is_projector
from engine.hub.pairing import Candidate, choose_projector
from engine.hub.summary import ModelSummary, summarize_file

log = logging.getLogger(__name__)
LAST_USED_FILE = ".hearth-last-used.json"
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_PROJECTOR_LAYER = "application/vnd.ollama.image.projector"
_OLLAMA_DIGEST = re.compile(r"sha256[:-][0-9a-f]{64}")
MAX_DEPTH = 8  # LM Studio keeps models/<publisher>/<repo>/<file>: depth 2


def models_dir() -> Path:
    """``$HEARTH_MODELS_DIR``, else ``<data dir>/models`` (``$HEARTH_DATA_DIR`` or the
    platform's user data folder for "Hearth", as `app.system.paths.data_dir`)."""
    override = settings.MODELS_DIR.path()
    if override is not None:
        return override
    data = settings.DATA_DIR.path()
    if data is not None:
        return data / "models"
    import platformdirs

    return Path(platformdirs.user_data_dir("Hearth", appauthor=False)) / "models"


def list_models(include_other_apps: bool = True) -> list[ModelSummary]:
    """Every GGUF model in Hearth's folder (and other apps' folders), newest use first, each
    with the vision projector it pairs with (``mmproj``). A file whose header cannot be read
    is listed with ``unreadable`` saying why (so it can be deleted), and never hides the
    rest; a projector is not listed on its own."""
    found: list[tuple[Path, str]] = [(p, "hearth") for p in _ggufs(models_dir())]
    if include_other_apps:
        found += other_app_models()
    used = _read_last_used()
    out: list[ModelSummary] = []
    projectors: list[Candidate] = []
    seen: set[str] = set()
    for path, source in found:
        key = str(path.resolve())
        if key in seen:
            continue
        seen.add(key)
        try:
            summary = summarize_file(path, source=source)
        except (EngineError, OSError, RecursionError, MemoryError) as exc:
            log.warning("unreadable %s: %s", path, exc)
            if not is_projector(path.name):  # a broken mmproj is no chat model either
                out.append(_unreadable(path, source, exc))
            continue
        if summary.is_projector:
            projectors.append(Candidate(path, summary.embedding_width))
            continue
        if source == "ollama":
            summary = _replace(summary, name=_ollama_name(path) or summary.name)
        out.append(_replace(summary, last_used=used.get(summary.path)))
    out = [_with_projector(m, projectors) for m in out]
    return sorted(out, key=lambda s: (-(s.last_used or 0.0), s.name.lower()))


def _with_projector(model: ModelSummary, projectors: list[Candidate]) -> ModelSummary:
    if model.unreadable:
        return model
    path = Path(model.path)
    found = ollama_projector(path) if model.source == "ollama" else None
    if found is None and model.source != "ollama":
        found = choose_projector(Candidate(path, model.embedding_width), projectors)
    return _replace(model, mmproj=str(found)) if found is not None else model


def projector_for(model: Path | str) -> Path | None:
    """The vision projector on disk that belongs to the model file ``model``: for an Ollama
    blob, its manifest's projector layer; else a projector in its folder (headers read
    once, cached; `engine.hub.pairing` decides). None when it has none."""
    path = _absolute(model)
    found = ollama_projector(path)
    if found is not None or _is_ollama_blob(path):
        return found
    try:
        width = summarize_file(path).embedding_width
    except (EngineError, OSError, RecursionError, MemoryError):
        width = 0
    candidates = []
    for other in _ggufs(path.parent):
        if other.name == path.name:
            continue
        try:
            summary = summarize_file(other)
        except (EngineError, OSError, RecursionError, MemoryError):
            continue
        if summary.is_projector:
            candidates.append(Candidate(_absolute(other), summary.embedding_width))
    return choose_projector(Candidate(path, width), candidates)


def _unreadable(path: Path, source: str, exc: BaseException) -> ModelSummary:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    reason = str(exc).replace(str(_absolute(path)), "").strip(" :") or type(exc).__name__
    return ModelSummary.unreadable_file(str(_absolute(path)), size, source, reason)


def delete_model(path: Path | str) -> list[Path]:
    """Delete a model file from Hearth's folder, and its vision projector when no other model
    there pairs with it (a projector is never listed, so it could not be deleted later); refuse
    anything outside the folder. The files deleted, the model first."""
    target, root = _absolute(path), _absolute(models_dir())
    # A link inside the folder is removed, not its target; but a linked *folder* inside it
    # leads out of it (issue 22 A18): the file's real folder must be the models folder's.
    if root not in target.parents or not _inside(target.parent, root):
        raise InvalidParamsError(
            f"{target} is not in Hearth's models folder ({root}); Hearth deletes only the "
            "models it downloaded"
        )
    if not target.is_file() and not target.is_symlink():
        raise ModelLoadError(f"{target} does not exist")
    projector = projector_for(target) if not target.is_symlink() else None
    target.unlink()
    used = _read_last_used()
    if used.pop(str(target), None) is not None:
        _write_last_used(used)
    deleted = [target]
    if projector is not None and projector.parent == target.parent and projector.is_file():
        others = [p for p in _ggufs(target.parent) if _absolute(p) != projector]
        if not any(projector_for(p) == projector for p in others if not _is_projector_file(p)):
            projector.unlink()  # nobody else's: a hidden file of hundreds of MB otherwise
            deleted.append(projector)
    return deleted


def _is_projector_file(path: Path) -> bool:
    try:
        return summarize_file(path).is_projector
    except (EngineError, OSError, RecursionError, MemoryError):
        return is_projector(path.name)


def _inside(folder: Path, root: Path) -> bool:
    try:
        real, real_root = folder.resolve(), root.resolve()
    except (OSError, RuntimeError):
        return False
    return real == real_root or real_root in real.parents


def touch_last_used(path: Path | str) -> None:
    """Record that the model at ``path`` was just used (any path, in any folder)."""
    used = _read_last_used()
    used[str(_absolute(path))] = time.time()
    _write_last_used(used)


def other_app_models() -> list[tuple[Path, str]]:
    """(path, source) of the GGUFs LM Studio, GPT4All and Ollama keep in their usual places."""
    found: list[tuple[Path, str]] = []
    for source, folders in _other_app_folders().items():
        for folder in folders:
            found += [(p, source) for p in _ggufs(folder, recursive=source == "lmstudio")]
    found += [(p, "ollama") for p in ollama_blobs(Path.home() / ".ollama" / "models")]
    return found


def ollama_blobs(root: Path) -> list[Path]:
    """The model blobs Ollama's manifests point to (GGUF files named by their digest)."""
    blobs: list[Path] = []
    for _manifest, layers in _ollama_manifests(root):
        blob = layers.get(OLLAMA_MODEL_LAYER)
        if blob is not None and blob.is_file():
            blobs.append(blob)
    return blobs


def ollama_projector(blob: Path) -> Path | None:
    """The projector blob of the Ollama manifest whose model layer is ``blob`` (Ollama keeps
    a vision model's projector as a layer of its own), or None."""
    if not _is_ollama_blob(blob):
        return None
    for _manifest, layers in _ollama_manifests(blob.parent.parent):
        if layers.get(OLLAMA_MODEL_LAYER) == blob:
            projector = layers.get(OLLAMA_PROJECTOR_LAYER)
            if projector is not None and projector.is_file():
                return projector
    return None


def _is_ollama_blob(path: Path) -> bool:
    return path.parent.name == "blobs" and (path.parent.parent / "manifests").is_dir()


def _ollama_manifests(root: Path) -> list[tuple[Path, dict[str, Path]]]:
    """Each manifest under ``root`` with its layers' blob paths by media type (a digest that
    is not a sha256 — "../x", "/etc/x", 5,000 characters — is skipped)."""
    found: list[tuple[Path, dict[str, Path]]] = []
    manifests = root / "manifests"
    if not manifests.is_dir():
        return found
    for manifest in manifests.rglob("*"):
        if not manifest.is_file():
            continue
        try:
            layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
        except (OSError, ValueError, AttributeError):
            continue
        blobs: dict[str, Path] = {}
        for layer in layers if isinstance(layers, list) else []:
            if not isinstance(layer, dict):
                continue
            digest = str(layer.get("digest", ""))
            if not _OLLAMA_DIGEST.fullmatch(digest):
                log.warning("ignoring %s: a layer digest that is not sha256", manifest)
                continue
            blobs.setdefault(str(layer.get("mediaType")), root / "blobs" / digest.replace(":", "-"))
        found.append((manifest, blobs))
    return found


def _ollama_name(blob: Path) -> str:
    """ "name:tag" of the manifest that points to ``blob`` ("" if none)."""
    root = blob.parent.parent
    digest = blob.name.replace("-", ":", 1)
    for manifest in (root / "manifests").rglob("*"):
        with contextlib.suppress(OSError, ValueError):
            if manifest.is_file() and digest in manifest.read_text(encoding="utf-8"):
                return f"{manifest.parent.name}:{manifest.name}"
    return ""


def _other_app_folders() -> dict[str, list[Path]]:
    home = Path.home()
    if sys.platform == "win32":
        local = Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
        gpt4all = [local / "nomic.ai" / "GPT4All"]
    elif sys.platform == "darwin":
        gpt4all = [home / "Library" / "Application Support" / "nomic.ai" / "GPT4All"]
    else:
        gpt4all = [home / ".local" / "share" / "nomic.ai" / "GPT4All"]
    lmstudio = [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]
    return {"lmstudio": lmstudio, "gpt4all": gpt4all}


def _ggufs(folder: Path, *, recursive: bool = False) -> list[Path]:
    if not folder.is_dir():
        return []
    files = _walk(folder, MAX_DEPTH if recursive else 0)
    return sorted(
        p for p in files if p.suffix == ".gguf" and p.is_file() and not p.name.startswith(".")
    )


def _walk(folder: Path, max_depth: int) -> list[Path]:
    """Files under ``folder`` at most ``max_depth`` folders down, iteratively, each real
    folder once (a linked folder is followed, a link loop is not): a 1,200-deep tree was a
    RecursionError and an empty list (issue 22 A17)."""
    found: list[Path] = []
    pending, seen = [(folder, 0)], {os.path.realpath(folder)}
    while pending:
        here, depth = pending.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if not entry.is_dir():
                    found.append(Path(entry.path))
                elif depth < max_depth and os.path.realpath(entry.path) not in seen:
                    seen.add(os.path.realpath(entry.path))
                    pending.append((Path(entry.path), depth + 1))
    return found


def _absolute(path: Path | str) -> Path:
    """Absolute, with links kept (the key `summarize_file` uses for ``ModelSummary.path``)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _replace(summary: ModelSummary, **changes: object) -> ModelSummary:
    from dataclasses import replace

    return replace(summary, **changes)  # type: ignore[arg-type]


def _read_last_used() -> dict[str, float]:
    try:
        data = json.loads((models_dir() / LAST_USED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_last_used(used: dict[str, float]) -> None:
    folder = models_dir()
    with contextlib.suppress(OSError):  # losing "last used" costs only the sort order
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(used, f)
        os.replace(tmp, folder / LAST_USED_FILE)
