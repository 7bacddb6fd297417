"""An exclusive lock on a file, held by the operating system: one transfer of a file at a time
across threads and processes (the app and the CLI).

Owns taking and releasing the lock: ``flock`` on POSIX (per open file, so two threads of one
process exclude each other too), ``msvcrt.locking`` on Windows. The OS drops the lock when its
holder dies, so there is no stale lock to take over. A pid-file with "take over a dead owner's
file" let two processes hold it at once (issue 22 A10: 1-181 of 200 rounds). The lock file is
removed on release, while still locked; a taker that locked a file already removed sees that
its inode is no longer the path's and tries again. Does not own what the lock protects.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path


class FileLock:
    """``try_acquire()`` -> bool, ``release()``; the holder's pid is written into the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        for _ in range(8):  # only a release racing with us makes this loop
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            if not _lock(fd):
                os.close(fd)
                return False
            if _same_file(fd, self.path):
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                self._fd = fd
                return True
            _unlock(fd)  # locked a file its holder removed meanwhile: take the new one
            os.close(fd)
        return False

    def owner(self) -> int | None:
        """The pid written by the holder (None when unreadable)."""
        try:
            return int(self.path.read_text(encoding="utf-8").strip() or "0") or None
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if sys.platform != "win32":  # removed while held: no one can lock a stale inode
            with contextlib.suppress(OSError):
                self.path.unlink()
        _unlock(fd)
        os.close(fd)
        if sys.platform == "win32":  # Windows cannot remove an open file
            with contextlib.suppress(OSError):
                self.path.unlink()


def _same_file(fd: int, path: Path) -> bool:
    try:
        held, named = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
