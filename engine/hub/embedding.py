"""The embedding models Hearth offers for document retrieval, and getting one onto disk.

Owns `EmbeddingModel` (read from the ``embedding_models`` list of assets/catalogue.json, apart
from the chat models so it never shows in the chat model picker), where embedding models live
(``<models folder>/embeddings``: the chat library lists only the top of the models folder) and
the download, which is `engine.hub.download.download`: resumable, sha256-verified against the
Hub's LFS hash. Torch-free, so the app may import it. Does not own running the model
(`engine.embed`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ModelNotFoundError
from engine.hub.catalogue import catalogue_section, languages_of
from engine.hub.download import ProgressFn, download
from engine.hub.library import models_dir
from engine.hub.search import HubFile


@dataclass(frozen=True)
class EmbeddingModel:
    repo_id: str
    filename: str
    name: str
    architecture: str  # the GGUF's general.architecture
    dim: int  # vector length
    pooling: str  # "last" (Qwen3-Embedding) or "mean"
    quant: str
    size_bytes: int  # about; the download reads the exact size and sha256 from the Hub
    languages: tuple[str, ...]
    licence: str
    licence_url: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if self.pooling not in ("last", "mean"):
            raise ValueError(
                f"{self.repo_id}: pooling must be 'last' or 'mean', got {self.pooling!r}"
            )
        if self.dim <= 0:
            raise ValueError(f"{self.repo_id}: dim must be > 0, got {self.dim}")


def load_embedding_models(path: Path | None = None) -> list[EmbeddingModel]:
    """The catalogue's embedding models (the first is the default); CorruptModelError if bad."""
    return catalogue_section("embedding_models", _entry, path)


def _entry(raw: dict[str, object]) -> EmbeddingModel:
    return EmbeddingModel(
        repo_id=str(raw["repo_id"]),
        filename=str(raw["filename"]),
        name=str(raw["name"]),
        architecture=str(raw["architecture"]),
        dim=int(str(raw["dim"])),
        pooling=str(raw.get("pooling", "last")),
        quant=str(raw.get("quant", "")),
        size_bytes=int(str(raw.get("size_bytes", 0))),
        languages=languages_of(raw),
        licence=str(raw["licence"]),
        licence_url=str(raw.get("licence_url", "") or ""),
        description=str(raw.get("description", "") or ""),
    )


def embeddings_dir() -> Path:
    return models_dir() / "embeddings"


def installed_path(model: EmbeddingModel) -> Path | None:
    """The model's file when it is on disk (downloaded whole), else None."""
    path = embeddings_dir() / model.filename.rsplit("/", 1)[-1]
    return path if path.is_file() else None


def download_embedding_model(
    model: EmbeddingModel,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Download (or resume) ``model`` into `embeddings_dir`; verified by its sha256."""
    file = HubFile(model.repo_id, model.filename, model.size_bytes, None, model.quant)
    return download(
        file,
        dest_dir=embeddings_dir(),
        token=token,
        endpoint=endpoint,
        progress=progress,
        cancel=cancel,
    )


def resolve_embedding_model(model: str) -> str:
    """``model`` as `engine.loader.load_model` takes it: an existing path stays as it is; a
    catalogue embedding model's name, repo id or file name becomes its file on disk
    (ModelNotFoundError, naming the download, when it is not there yet); anything else is
    passed on (`load_model` says what it cannot find)."""

    if Path(model).expanduser().exists():
        return str(Path(model).expanduser())
    wanted = model.strip().lower()
    for entry in load_embedding_models():
        keys = {entry.name.lower(), entry.repo_id.lower(), entry.filename.lower()}
        if wanted in keys:
            path = installed_path(entry)
            if path is None:
                raise ModelNotFoundError(
                    f"the embedding model {entry.name} is not downloaded yet "
                    f"({entry.repo_id}/{entry.filename}, about {entry.size_bytes / 1e6:,.0f} MB)"
                )
            return str(path)
    return model
