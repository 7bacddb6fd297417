"""Conversation KV caches saved on disk, so a chat reopened after a restart resumes at once.

Owns the cache files under ``<cache root>/conversations/``: one file per (conversation, key),
written when the engine parks a conversation (the user left the chat) or closes (the app
quits), read back when that conversation's next turn finds nothing parked in memory. The key
names everything the cached K/V depend on: the model file's identity, the chat template, the
runner (its converted graph, context window, decode mode). The file holds the exact token ids
the K/V belong to; the generation loop then keeps their longest common prefix with the new
prompt, so only the new tokens are prefilled.

A file whose magic, format, key, sizes or CRC-32 do not match is deleted and ignored: the chat
simply prefills. Its header is checked against the file's real size before anything is
allocated, so a header that asks for a terabyte costs nothing. Files are written to a
temporary name and renamed, so a crash never leaves a half file that looks whole; a write that
fails part-way deletes its temporary file, and temporary files a crashed process left behind
count against the budget and are deleted with the next write. The folder stays under a byte
budget: after each write the least recently used files (by mtime; a read touches it) are
deleted.

Not compressed: zlib on SmolLM2's float32 K/V of a 2,000-token chat (92 MB) saves 8% (16% with
the float bytes split into planes) for 2.6-3.3 s to compress and 0.7-0.8 s to inflate, against
0.05 s to read it raw here. Writes run on one background thread (the state handed in is
already a private copy); reads wait for pending writes. Does not own the tensors' layout (the
runner's ``export_state`` / ``import_state``) or which conversation is live
(`engine.kv_cache.ConversationCaches`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import queue
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

MAGIC = b"HEARTHKV"
FORMAT = 1
SUFFIX = ".hkv"
TMP_SUFFIX = ".tmp"
MAX_HEADER_BYTES = 64 * 2**20  # the ids of a 1M-token chat are ~8 MB of JSON
_ARRAY_KINDS = frozenset("fiub")  # numeric arrays only: never objects from a file
DEFAULT_BUDGET_BYTES = 4 * 2**30  # a few GB: ~45 SmolLM2 chats of 2,000 tokens
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SavedState:
    """A runner's cache as plain arrays: the token ids, the arrays, and how they are laid out."""

    ids: list[int]
    arrays: list[np.ndarray]
    layout: dict[str, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays)


@runtime_checkable
class PersistentRunner(Protocol):
    """A Runner whose cache can be written out as arrays and read back (the fast path)."""

    def export_state(self) -> SavedState: ...

    def import_state(self, state: SavedState) -> None: ...

    def state_key(self) -> str: ...


class KVStore:
    """Saved conversation caches under ``folder`` for one model key (see the module docstring)."""

    def __init__(self, folder: Path, key: dict[str, str], budget_bytes: int) -> None:
        self.folder = folder
        self.key = dict(key)
        self.budget_bytes = budget_bytes
        self._key_hash = _digest(json.dumps(self.key, sort_keys=True))[:16]
        self._queue: queue.Queue[tuple[Path, SavedState] | None] = queue.Queue()
        self._pending = 0
        self._idle = threading.Condition()
        self._writer: threading.Thread | None = None

    def path_for(self, conversation_id: str) -> Path:
        return self.folder / f"{_digest(conversation_id)[:24]}-{self._key_hash}{SUFFIX}"

    def save(self, conversation_id: str, state: SavedState) -> None:
        """Write ``state`` (a private copy) for ``conversation_id`` in the background."""
        if not state.ids or state.nbytes > self.budget_bytes:
            return
        with self._idle:
            self._pending += 1
        if self._writer is None or not self._writer.is_alive():
            self._writer = threading.Thread(target=self._write_loop, name="kv-store", daemon=True)
            self._writer.start()
        self._queue.put((self.path_for(conversation_id), state))

    def load(self, conversation_id: str) -> SavedState | None:
        """The saved state of ``conversation_id`` for this key, or None (a bad file is deleted)."""
        self.flush()
        path = self.path_for(conversation_id)
        if not path.is_file():
            return None
        try:
            state = self._read(path)
        except (OSError, ValueError, KeyError, TypeError, MemoryError) as exc:
            log.warning("saved cache %s unusable (%s); deleted, the chat prefills", path.name, exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: last in line for eviction
        return state

    def forget(self, conversation_id: str) -> None:
        self.flush()
        with contextlib.suppress(OSError):
            self.path_for(conversation_id).unlink()

    def flush(self) -> None:
        """Wait until every queued write is on disk."""
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0)

    # ---- files --------------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            path, state = item
            try:
                self._write(path, state)
                self._evict(keep=path)
            except OSError as exc:  # a full disk costs the saved cache, never the chat
                log.warning("could not save the conversation cache %s: %s", path.name, exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def _write(self, path: Path, state: SavedState) -> None:
        crc = 0
        for a in state.arrays:
            crc = zlib.crc32(np.ascontiguousarray(a).data, crc)
        header = {
            "key": self.key,
            "ids": [int(i) for i in state.ids],
            "layout": state.layout,
            "arrays": [[list(a.shape), a.dtype.str] for a in state.arrays],
            "crc32": crc,
        }
        blob = json.dumps(header).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(TMP_SUFFIX)
        try:
            with tmp.open("wb") as f:
                f.write(MAGIC + struct.pack("<II", FORMAT, len(blob)) + blob)
                for a in state.arrays:
                    f.write(np.ascontiguousarray(a).data)
            os.replace(tmp, path)
        except BaseException:  # a full disk, a quota: the half file must not keep its bytes
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def _read(self, path: Path) -> SavedState:
        with path.open("rb") as f:
            head = f.read(len(MAGIC) + 8)
            if head[: len(MAGIC)] != MAGIC:
                raise ValueError("not a saved cache")
            fmt, size = struct.unpack("<II", head[len(MAGIC) :])
            if fmt != FORMAT:
                raise ValueError(f"format {fmt}, expected {FORMAT}")
            if size > MAX_HEADER_BYTES:
                raise ValueError(f"a {size}-byte header")
            header = json.loads(f.read(size))
            if header["key"] != self.key:
                raise ValueError("saved for another model, template or runner")
            specs = _array_specs(header["arrays"])
            body = os.fstat(f.fileno()).st_size - f.tell()
            if sum(math.prod(shape) * dtype.itemsize for shape, dtype in specs) != body:
                raise ValueError("the header's array sizes disagree with the file's size")
            arrays, crc = [], 0
            for shape, dtype in specs:
                a = np.empty(shape, dtype=dtype)
                if f.readinto(cast(Any, a.reshape(-1).view(np.uint8))) != a.nbytes:
                    raise ValueError("truncated")
                crc = zlib.crc32(a.data, crc)
                arrays.append(a)
            if f.read(1):
                raise ValueError("trailing bytes")
        if crc != header["crc32"]:
            raise ValueError("checksum mismatch")
        return SavedState([int(i) for i in header["ids"]], arrays, dict(header["layout"]))

    def _evict(self, keep: Path) -> None:
        """Delete the temporary files a crash left and the least recently used files until
        the folder fits the budget. Only this thread writes here, so every ``.tmp`` is stale."""
        for p in self.folder.glob(f"*{TMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                p.unlink()
        files = []
        for p in self.folder.glob(f"*{SUFFIX}"):
            with contextlib.suppress(OSError):
                st = p.stat()
                files.append((st.st_mtime_ns, st.st_size, p))
        total = sum(size for _t, size, _p in files)
        for _mtime, size, p in sorted(files):
            if total <= self.budget_bytes:
                break
            if p != keep:
                with contextlib.suppress(OSError):
                    p.unlink()
                    total -= size


def _array_specs(raw: Any) -> list[tuple[tuple[int, ...], np.dtype[Any]]]:
    """The header's ``[[shape], dtype]`` list, checked: non-negative integer dimensions and
    numeric dtypes only (raises ValueError/TypeError otherwise)."""
    specs = []
    for shape, dtype_str in raw:
        dims = tuple(shape)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
            raise ValueError(f"bad array shape {shape!r}")
        dtype = np.dtype(str(dtype_str))
        if dtype.kind not in _ARRAY_KINDS:
            raise ValueError(f"array dtype {dtype_str!r} is not numeric")
        specs.append((dims, dtype))
    return specs


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
