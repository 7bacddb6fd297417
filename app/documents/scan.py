"""Finding the documents under a folder and fingerprinting them.

Owns which files a collection picks up (supported types; hidden files and folders, and folders
of tools such as ``node_modules`` and ``.git``, skipped; symlinked folders not followed, so a
loop cannot trap the walk), why a file found there is refused before it is read (a link whose
target is outside the folder: a linked ``credentials`` file must not become searchable text;
anything but a regular file; a name that is not UTF-8, which SQLite cannot store), the text
form of a path the index stores, and the content hash that tells a touched file from a changed
one. Does not own reading the files (`app.documents.extract`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from app.documents.extract import SUPPORTED_SUFFIXES, DocumentError, read_regular

MAX_FILES = 100_000
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})


def list_files(root: Path) -> list[Path]:
    """``root`` itself when it is not a folder (`refusal` says if it cannot be read); else its
    supported files, sorted, at most MAX_FILES."""
    if not root.is_dir():
        return [root] if os.path.lexists(root) else []
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


def storable(path: Path | str) -> str:
    """``path`` as text SQLite and JSON can hold: a name that is not UTF-8 (``caf\\xe9.txt``
    from another system) keeps its odd bytes as ``\\xe9`` escapes."""
    text = str(path)
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:  # a lone surrogate from a Windows name
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def refusal(file: Path, root: Path) -> str | None:
    """Why ``file``, found under ``root``, is not read (one line), or None. Checked before any
    read: a link must resolve inside ``root``, the file must be a regular one, its name UTF-8."""
    name = storable(file.name)
    if storable(file) != str(file):
        return f"{name}: the file name is not valid UTF-8 (made on another system?); rename it"
    try:
        link = file.is_symlink()
        real = file.resolve(strict=True) if link else file
        info = real.stat()
    except (OSError, RuntimeError):  # a dangling link or a loop of links
        return f"{name}: a link that leads nowhere" if file.is_symlink() else None
    if link and root.is_dir() and not real.is_relative_to(root.resolve()):
        return f"{name}: a link to a file outside the folder; Hearth follows links only inside it"
    if not stat.S_ISREG(info.st_mode):
        return f"{name}: not a regular file (a pipe, device or socket); Hearth reads only those"
    return None


def file_digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes (None when it cannot be read, is not a regular file or is
    over the size cap)."""
    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except DocumentError:
        return None
