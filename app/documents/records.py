"""The plain records the document index hands out: progress, reports, collection and file rows
(with each collection's languages).

Owns nothing but their shape; `app.documents.index` makes them, the CLI, the background
indexer and the Collections window read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IndexProgress:
    done: int
    total: int
    file: str


@dataclass
class IndexReport:
    """What one add or rescan did. ``added``/``updated`` count files indexed; a file Hearth
    cannot read as a document (binary, a scan without text, encrypted, too big) is
    ``skipped`` with the reason, one that broke while indexing (a disk or embedder error) is
    ``failed``: (file, one-line message) each."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    cancelled: bool = False


@dataclass(frozen=True)
class LanguageShare:
    """One language of a collection: its BCP 47 ``tag`` ("zh-Hans", "en") and ``share``, the
    fraction (0-1) of the collection's chunks written in it (`app.documents.languages`)."""

    tag: str
    share: float


@dataclass(frozen=True)
class CollectionInfo:
    """A collection's row: counts, the embedding model it was indexed with (a path; None for
    keyword search only) and its languages, largest share first (tiny shares left out)."""

    name: str
    files: int
    chunks: int
    failed: int
    skipped: int = 0
    missing: int = 0
    embed_model: str | None = None
    languages: tuple[LanguageShare, ...] = ()


@dataclass(frozen=True)
class FileInfo:
    path: str
    status: str  # "ok", "skipped" (not readable as a document), "failed", "missing"
    error: str | None
    chunks: int


ProgressFn = Callable[[IndexProgress], None]
