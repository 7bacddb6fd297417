"""The guard models Hearth offers for the safety review (the catalogue's "Safety" section).

Owns `GuardModel` (read from the ``guard_models`` list of assets/catalogue.json, apart from the
chat models so a guard never shows in the chat model picker), where guards live
(``<models folder>/guards``: the chat library lists only the top of the models folder, and
``--guard-model NAME`` finds a file there by name), which of them are on disk
(`downloaded_guards`, what Preferences → Safety review offers) and the download, which is
`engine.hub.download.download`: resumable, sha256-verified against the Hub's LFS hash.
Torch-free, so the app may import it. Does not own running a guard (`engine.safety`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from engine.hub.catalogue import catalogue_section, languages_of
from engine.hub.download import ProgressFn, download
from engine.hub.library import models_dir
from engine.hub.names import local_name
from engine.hub.search import HubFile


@dataclass(frozen=True)
class GuardModel:
    repo_id: str
    filename: str  # by the publisher's usual naming; `checked_online` says whether seen
    name: str
    architecture: str  # the GGUF's general.architecture ("qwen3")
    params_b: float
    quant: str
    size_bytes: int  # about; the download reads the exact size and sha256 from the Hub
    languages: tuple[str, ...]
    licence: str
    licence_url: str = ""
    description: str = ""
    checked_online: bool = False  # False: repo and file named as the publisher usually does

    def __post_init__(self) -> None:
        if self.params_b <= 0:
            raise ValueError(f"{self.repo_id}: params_b must be > 0, got {self.params_b}")
        if not self.filename.lower().endswith(".gguf"):
            raise ValueError(f"{self.repo_id}: filename must be a .gguf, got {self.filename!r}")


def load_guard_models(path: Path | None = None) -> list[GuardModel]:
    """The catalogue's guard models, smallest first; CorruptModelError if malformed."""
    return sorted(catalogue_section("guard_models", _entry, path), key=lambda g: g.params_b)


def _entry(raw: dict[str, object]) -> GuardModel:
    return GuardModel(
        repo_id=str(raw["repo_id"]),
        filename=str(raw["filename"]),
        name=str(raw["name"]),
        architecture=str(raw["architecture"]),
        params_b=float(str(raw["params_b"])),
        quant=str(raw.get("quant", "")),
        size_bytes=int(str(raw.get("size_bytes", 0))),
        languages=languages_of(raw),
        licence=str(raw["licence"]),
        licence_url=str(raw.get("licence_url", "") or ""),
        description=str(raw.get("description", "") or ""),
        checked_online=bool(raw.get("checked_online", False)),
    )


def guards_dir() -> Path:
    return models_dir() / "guards"


def installed_path(model: GuardModel) -> Path | None:
    """The guard's file when it is on disk (downloaded whole), else None."""
    path = guards_dir() / local_name(model.filename)
    return path if path.is_file() else None


def downloaded_guards() -> list[tuple[GuardModel, Path]]:
    """The catalogue's guards that are on disk, with their files (smallest first)."""
    found = []
    for model in load_guard_models():
        path = installed_path(model)
        if path is not None:
            found.append((model, path))
    return found


def hub_file(model: GuardModel) -> HubFile:
    """The guard as a Hub file to download (size and sha256 are read from the Hub)."""
    return HubFile(model.repo_id, model.filename, model.size_bytes, None, model.quant)


def download_guard_model(
    model: GuardModel,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Download (or resume) ``model`` into `guards_dir`; verified by its sha256."""
    return download(
        hub_file(model),
        dest_dir=guards_dir(),
        token=token,
        endpoint=endpoint,
        progress=progress,
        cancel=cancel,
    )
