"""Encoded images kept so the same image is never encoded twice: in memory and on disk, LRU.

Owns `EmbeddingCache`: rows keyed by (the image file's sha256, the mmproj's identity, the
budget), an in-memory LRU bounded in bytes, and a disk folder of ``.npy`` files (under
``<cache folder>/vision/``) bounded in bytes too, least recently used first out (a hit touches
the file). `get` says where a hit came from ("memory" or "disk") so callers report it. A
damaged or foreign file in the folder is a miss and is removed, never an error.

Does not own encoding, nor keeping images with their messages (the app's store does).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MEMORY_BYTES = 256 * 2**20
DISK_BYTES = 2 * 2**30


def image_key(image_sha256: str, mmproj_identity: str, budget: int | None) -> str:
    """The cache key of one image encoded by one mmproj at one budget."""
    raw = f"{image_sha256}|{mmproj_identity}|{budget}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass(frozen=True)
class Hit:
    rows: np.ndarray
    where: str  # "memory" or "disk"


class EmbeddingCache:
    """Thread-safe two-level LRU of image rows; ``folder=None`` keeps memory only."""

    def __init__(
        self,
        folder: Path | None,
        memory_bytes: int = MEMORY_BYTES,
        disk_bytes: int = DISK_BYTES,
    ) -> None:
        self.folder, self.memory_bytes, self.disk_bytes = folder, memory_bytes, disk_bytes
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Hit | None:
        with self._lock:
            rows = self._memory.get(key)
            if rows is not None:
                self._memory.move_to_end(key)
                return Hit(rows, "memory")
        rows = self._read(key)
        if rows is None:
            return None
        self._remember(key, rows)
        return Hit(rows, "disk")

    def put(self, key: str, rows: np.ndarray) -> None:
        rows = np.ascontiguousarray(rows, np.float32)
        rows.setflags(write=False)
        self._remember(key, rows)
        if self.folder is not None and rows.nbytes <= self.disk_bytes:
            self._write(key, rows)

    def _remember(self, key: str, rows: np.ndarray) -> None:
        if rows.nbytes > self.memory_bytes:
            return
        with self._lock:
            old = self._memory.pop(key, None)
            self._held -= 0 if old is None else old.nbytes
            self._memory[key] = rows
            self._held += rows.nbytes
            while self._held > self.memory_bytes:
                _, dropped = self._memory.popitem(last=False)
                self._held -= dropped.nbytes

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{key}.npy"

    def _read(self, key: str) -> np.ndarray | None:
        if self.folder is None:
            return None
        path = self._path(key)
        try:
            rows: np.ndarray = np.load(path, allow_pickle=False)
            os.utime(path)  # a hit is a use: least recently used goes first
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            path.unlink(missing_ok=True)  # damaged: a miss, and gone
            return None
        if rows.dtype != np.float32 or rows.ndim != 2:
            path.unlink(missing_ok=True)
            return None
        rows.setflags(write=False)
        return rows

    def _write(self, key: str, rows: np.ndarray) -> None:
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        with tmp.open("wb") as f:
            np.save(f, rows, allow_pickle=False)
        tmp.replace(self._path(key))  # whole or not at all
        self._trim()

    def _trim(self) -> None:
        assert self.folder is not None
        files = []
        for p in self.folder.glob("*.npy"):
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            files.append((st.st_mtime_ns, st.st_size, p))
        total = sum(size for _, size, _ in files)
        for _, size, p in sorted(files):
            if total <= self.disk_bytes:
                break
            p.unlink(missing_ok=True)
            total -= size
