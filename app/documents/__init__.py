"""Documents for chat: extraction, chunking and a local retrieval index. Qt-free.

The public names are re-exported here; see each module for what it owns.
"""

from __future__ import annotations

from pathlib import Path

from app.documents.background import WHOLE_INDEX, CollectionIndexer
from app.documents.chunking import Chunk, chunk_document, estimate_tokens
from app.documents.extract import (
    SUPPORTED_SUFFIXES,
    Document,
    DocumentError,
    Section,
    extract_file,
    extract_text,
)
from app.documents.index import (
    CollectionInfo,
    DocumentIndex,
    Embedder,
    FileInfo,
    IndexProgress,
    IndexReport,
)
from app.documents.search import Hit
from app.system import paths

INDEX_NAME = "documents.sqlite3"


def documents_path() -> Path:
    """The document index beside the conversation database."""

    return paths.data_dir() / INDEX_NAME


__all__ = [
    "SUPPORTED_SUFFIXES",
    "WHOLE_INDEX",
    "Chunk",
    "CollectionIndexer",
    "CollectionInfo",
    "Document",
    "DocumentError",
    "DocumentIndex",
    "Embedder",
    "FileInfo",
    "Hit",
    "IndexProgress",
    "IndexReport",
    "Section",
    "chunk_document",
    "documents_path",
    "estimate_tokens",
    "extract_file",
    "extract_text",
]
