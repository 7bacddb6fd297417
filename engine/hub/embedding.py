"""The embedding models Hearth offers for document retrieval, and getting one onto disk.

Owns `EmbeddingModel` (read from the ``embedding_models`` list of assets/catalogue.json, apart
from the chat models so it never shows in the chat model picker), where embedding models live
(``<models folder>/embeddings``: the chat library lists only the top of the models folder) and
the download, which is `engine.hub.download.download`: resumable, sha256-verified against the
Hub's LFS hash. Also what an entry says about queries and languages: `query_instruction` (the
instruction a query in a given language gets, from the entry's ``query_instructions``, keyed by
BCP 47 tag, base language or "*") and `uncovered_languages` (a collection's languages the
model does not list). Torch-free, so the app may import it. Does not own running the model
(`engine.embed`) nor detecting a language (`engine.safety.language`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import CorruptModelError, ModelNotFoundError
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
    # (language key, instruction) pairs: a BCP 47 tag ("zh-Hant"), a base language ("zh") or
    # "*" for any other; the model card's own strings (see assets/catalogue.json's entries)
    query_instructions: tuple[tuple[str, str], ...] = ()

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
        query_instructions=_instructions_of(raw),
    )


def _instructions_of(raw: dict[str, object]) -> tuple[tuple[str, str], ...]:
    table = raw.get("query_instructions", {})
    if not isinstance(table, dict):
        raise ValueError(f"{raw.get('repo_id')}: query_instructions must map languages to text")
    return tuple((str(k), str(v)) for k, v in table.items())


def query_instruction(
    instructions: Iterable[tuple[str, str]], language: str, fallback: str = ""
) -> str:
    """The instruction a query in ``language`` (a BCP 47 tag such as "zh-Hant") gets: the
    entry for the tag, else for its base language ("zh"), else "*", else ``fallback``."""
    table = dict(instructions)
    for key in (language, language.split("-")[0], "*"):
        if key in table:
            return table[key]
    return fallback


def uncovered_languages(found: Iterable[str], model_languages: Iterable[str]) -> list[str]:
    """The tags of ``found`` (a collection's languages, "zh-Hans", "ja", ...) whose base
    language is not among ``model_languages`` (a catalogue entry's base codes), in order."""
    listed = {m.split("-")[0].lower() for m in model_languages}
    return [tag for tag in found if tag.split("-")[0].lower() not in listed]


def embedding_model_for(
    model: str, models: Sequence[EmbeddingModel] | None = None
) -> EmbeddingModel | None:
    """The catalogue entry of ``model`` (a file path, a name, a repo id) among ``models``
    (the catalogue's when None), or None when it is not one of them (or the catalogue is
    unreadable: retrieval still runs)."""
    wanted = {model.strip().lower(), Path(model).name.lower()}
    if models is None:
        try:
            models = load_embedding_models()
        except CorruptModelError:
            return None
    for entry in models:
        names = {entry.name, entry.repo_id, entry.filename, entry.filename.rsplit("/", 1)[-1]}
        if wanted & {n.lower() for n in names}:
            return entry
    return None


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
