"""One Hearth per user: a second launch focuses the first window instead of opening another.

Owns the per-user lock and the local socket that a second launch uses to poke the first.
Knows nothing about windows: the first instance emits ``sig_activation_requested`` and the
application raises its own window.

Ownership is decided by a ``QLockFile`` (it records the holder's PID, so a lock left by a
crashed process is detected as stale and taken over), not by whether ``listen()`` succeeds:
on Unix a crashed server leaves its socket file behind, and two racing launches could both
remove it and listen. The local socket only carries the "activate" message.

Call ``try_acquire()`` after the ``QApplication`` exists and before building the main window,
so a second launch exits quickly.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import time
from pathlib import Path

from PySide6.QtCore import QDir, QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from app.system.paths import data_dir

ACTIVATE_MESSAGE = b"activate\n"
# How long a second launch keeps trying to reach a first instance that holds the lock but is
# still starting up (its server may not be listening yet).
_CONNECT_PATIENCE_S = 3.0
_CONNECT_STEP_MS = 200


def _data_dir() -> str:
    """The user data dir, used only to make the key unique (two data dirs, two instances)."""

    return str(data_dir())


def server_name(key: str) -> str:
    """A socket name unique per user and per data dir, short enough for a Unix socket path."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): fall back to the uid
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    digest = hashlib.sha256(f"{user}\0{_data_dir()}".encode()).hexdigest()[:16]
    return f"{key}-{digest}"


class SingleInstance(QObject):
    """Holds the per-user instance lock and listens for activation requests."""

    sig_activation_requested = Signal()

    def __init__(self, key: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name = server_name(key)
        self._lock = QLockFile(str(Path(QDir.tempPath()) / f"{self._name}.lock"))
        # 0 disables age-based staleness: a live holder keeps the lock however long it runs;
        # a dead holder's lock is still recognised as stale through its recorded PID.
        self._lock.setStaleLockTime(0)
        self._server: QLocalServer | None = None

    @property
    def name(self) -> str:
        return self._name

    def try_acquire(self) -> bool:
        """True if this process is now the instance; False if another one runs (it was poked)."""
        if self._lock.tryLock(100):
            return self._listen()
        self._poke_running_instance()
        return False

    def release(self) -> None:
        """Stop listening and drop the lock (safe to call twice)."""
        if self._server is not None:
            self._server.close()
            self._server.deleteLater()
            self._server = None
        if self._lock.isLocked():
            self._lock.unlock()

    def _listen(self) -> bool:
        # We hold the lock, so any socket file with our name is a leftover of a crash.
        QLocalServer.removeServer(self._name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self._name):
            # Still the only instance (we hold the lock); just unreachable for pokes.
            server.deleteLater()
            return True
        server.newConnection.connect(self._on_server_new_connection)
        self._server = server
        return True

    def _on_server_new_connection(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._on_socket_ready_read(s))
            socket.disconnected.connect(lambda s=socket: self._on_socket_disconnected(s))
            # The poker writes and disconnects at once: the bytes may already be buffered.
            if socket.bytesAvailable():
                self._on_socket_ready_read(socket)

    def _on_socket_ready_read(self, socket: QLocalSocket) -> None:
        data = bytes(socket.readAll().data())
        if ACTIVATE_MESSAGE.strip() in data:
            self.sig_activation_requested.emit()

    def _on_socket_disconnected(self, socket: QLocalSocket) -> None:
        if socket.bytesAvailable():
            self._on_socket_ready_read(socket)
        socket.deleteLater()

    def _poke_running_instance(self) -> bool:
        """Send "activate" to the running instance; False if it could not be reached."""
        deadline = time.monotonic() + _CONNECT_PATIENCE_S
        while True:
            socket = QLocalSocket()
            socket.connectToServer(self._name)
            if socket.waitForConnected(_CONNECT_STEP_MS):
                socket.write(ACTIVATE_MESSAGE)
                socket.waitForBytesWritten(1000)
                socket.disconnectFromServer()
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_CONNECT_STEP_MS / 1000)
