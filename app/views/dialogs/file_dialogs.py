"""File and folder pickers that open where the user was, not in the process's working folder.

Owns `FolderMemory`: one per main window, remembering for each kind of pick ("models",
"attachments", "documents", "import", "export") the folder the last choice was in (through
`app.system.settings`, once the application hands it the settings), and opening Qt's pickers
there: the home folder the first time, or when the remembered folder is gone. A picker given
no folder opens in the working folder, which for an app started from a menu or a terminal is
anywhere (``/``, the source checkout). Does not own what is done with the choice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QDir
from PySide6.QtWidgets import QFileDialog, QWidget

if TYPE_CHECKING:
    from app.system.settings import Settings


class FolderMemory:
    """Where each kind of picker opens; kept in memory until `use` gives it the settings."""

    def __init__(self) -> None:
        self._settings: Settings | None = None
        self._folders: dict[str, str] = {}

    def use(self, settings: Settings) -> None:
        """Remember across restarts from now on (the application calls this once)."""
        self._settings = settings

    def start(self, kind: str) -> str:
        """The folder a ``kind`` picker opens in: the last one used if it still exists."""
        if self._settings is not None:
            folder = self._settings.last_folder(kind)
        else:
            folder = self._folders.get(kind, "")
        return folder if folder and Path(folder).is_dir() else QDir.homePath()

    def remember(self, kind: str, chosen: str) -> None:
        """The next ``kind`` picker opens beside ``chosen``: in a file's folder, or in a
        chosen folder's parent (so its siblings show, as a collection's would)."""
        if not chosen:
            return
        folder = str(Path(chosen).parent)
        if self._settings is not None:
            self._settings.set_last_folder(kind, folder)
        else:
            self._folders[kind] = folder

    # -- the pickers --------------------------------------------------------------------------
    def open_file(self, parent: QWidget | None, kind: str, title: str, filters: str = "") -> str:
        path, _ = QFileDialog.getOpenFileName(parent, title, self.start(kind), filters)
        self.remember(kind, path)
        return path

    def open_files(
        self, parent: QWidget | None, kind: str, title: str, filters: str = ""
    ) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(parent, title, self.start(kind), filters)
        if paths:
            self.remember(kind, paths[0])
        return paths

    def open_folder(self, parent: QWidget | None, kind: str, title: str) -> str:
        folder = QFileDialog.getExistingDirectory(parent, title, self.start(kind))
        self.remember(kind, folder)
        return folder
