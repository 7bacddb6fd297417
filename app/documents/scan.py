"""Finding the documents under a folder and fingerprinting them.

Owns which files a collection picks up (supported types; hidden files and folders, and folders
of tools such as ``node_modules`` and ``.git``, skipped; symlinked folders not followed, so a
loop cannot trap the walk) and the content hash that tells a touched file from a changed one.
Does not own reading the files (`app.documents.extract`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from app.documents.extract import MAX_FILE_BYTES, SUPPORTED_SUFFIXES

MAX_FILES = 100_000
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})


def list_files(root: Path) -> list[Path]:
    """``root`` itself when it is a file; else its supported files, sorted, at most MAX_FILES."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if not name.startswith(".") and Path(name).suffix.lower() in SUPPORTED_SUFFIXES:
                found.append(Path(folder) / name)
                if len(found) >= MAX_FILES:
                    return found
    return found


def list_folders(root: Path, limit: int = MAX_FILES) -> list[Path]:
    """``root`` and the folders under it that `list_files` walks (for a watcher), at most
    ``limit``; a file's own folder when ``root`` is a file."""
    if root.is_file():
        return [root.parent]
    found: list[Path] = []
    for folder, dirs, _names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        found.append(Path(folder))
        if len(found) >= limit:
            break
    return found


def file_digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes (None when it cannot be read or is over the size cap)."""
    digest = hashlib.sha256()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        with path.open("rb") as stream:
            while block := stream.read(1 << 20):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()
