"""The partial file of one download: its ``.part`` bytes, JSON sidecar and lock.

Owns what lies under ``<models>/.partial/`` for one file version: the bytes held so far (kept
only for the same size and sha256, so a resume never trusts another version's prefix),
re-hashing them before a resume, the sidecar that lets `engine.hub.download.pending_downloads`
offer the resume after a restart, the OS file lock that lets one process at a time transfer
it, and the last step: sha256 check, fsync and atomic rename into the models folder (a
mismatch deletes the partial file). Does not own HTTP (`engine.hub.download`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from engine.errors import ChecksumMismatchError, HubError
from engine.hub.file_lock import FileLock
from engine.hub.names import saved_name
from engine.hub.search import HubFile

PARTIAL_DIR = ".partial"
CHUNK = 1 << 20


class Partial:
    """The ``.part`` file and its sidecar for one file version."""

    def __init__(self, folder: Path, file: HubFile, size: int, sha256: str, endpoint: str) -> None:
        self.folder, self.file, self.size, self.sha256 = folder, file, size, sha256
        base = saved_name(file.repo_id, file.filename)
        self.part = folder / PARTIAL_DIR / f"{base}.part"
        self.sidecar = folder / PARTIAL_DIR / f"{base}.part.json"
        self.meta = {
            "repo_id": file.repo_id,
            "filename": file.filename,
            "size": size,
            "sha256": sha256,
            "endpoint": endpoint,
        }
        self.digest = ""
        self.lock_path = folder / PARTIAL_DIR / f"{base}.part.lock"
        self.file_lock = FileLock(self.lock_path)
        self.locked = False

    def lock(self) -> None:
        """One transfer of a file at a time, across threads and processes (the app and the
        CLI): an OS file lock (`engine.hub.file_lock`), dropped by the OS if we die."""
        self.part.parent.mkdir(parents=True, exist_ok=True)
        if not self.file_lock.try_acquire():
            owner = self.file_lock.owner()
            who = f" (process {owner})" if owner else ""
            raise HubError(
                f"{self.file.filename} is already being downloaded{who}; "
                "wait for it to finish or cancel it"
            )
        self.locked = True

    def unlock(self) -> None:
        if self.locked:
            self.file_lock.release()
            self.locked = False

    def held(self) -> int:
        return self.part.stat().st_size if self.part.is_file() and self._same_version() else 0

    def prepare(self) -> None:
        """Keep a partial file of this exact version; anything else is discarded."""
        self.part.parent.mkdir(parents=True, exist_ok=True)
        if not self._same_version() or (
            self.part.is_file() and self.part.stat().st_size > self.size
        ):
            self.discard()
        self.sidecar.write_text(json.dumps(self.meta), encoding="utf-8")
        self.part.touch()

    def _same_version(self) -> bool:
        try:
            old = json.loads(self.sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(old, dict) and all(old.get(k) == self.meta[k] for k in ("size", "sha256"))

    def rehash(self) -> Any:
        """sha256 over the bytes already held (a resume trusts nothing it did not hash)."""
        hasher, left = hashlib.sha256(), self.held()
        with self.part.open("rb") as f:
            while left > 0 and (block := f.read(min(CHUNK, left))):
                hasher.update(block)
                left -= len(block)
        return hasher  # a hasher object to continue, unlike `_sha256_of`

    def truncate(self) -> None:
        self.part.write_bytes(b"")

    def discard(self) -> None:
        for path in (self.part, self.sidecar):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def finish(self, final: Path) -> Path:
        """Verify, then move into place atomically; a mismatch deletes the partial file."""
        if self.digest != self.sha256:
            self.discard()
            raise ChecksumMismatchError(
                f"{self.file.filename} failed its sha256 check (expected {self.sha256}, got "
                f"{self.digest}); the corrupted download was deleted — try again, or try "
                "another mirror"
            )
        with self.part.open("rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.part, final)
        with contextlib.suppress(FileNotFoundError):
            self.sidecar.unlink()
        return final
