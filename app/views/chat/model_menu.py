"""The main window's model button and its menu, with the "serve the local engine" toggle.

Owns the toolbar's model button (it names the loaded model), the menu it opens (finding and
downloading models, the bundled model, a folder or a GGUF file, remote endpoints, the recent
models, and the slower-path actions of `SlowPathNotice` at the top) and the checkable action
that serves the local engine over HTTP. Says what the user chose through its signals; the
window passes them on. Does not own loading models or the server (the application does).

Its words are filed under the translation context "MainWindow", where they lived before this
module was split out of `app.views.main_window`.
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from app.views.chat.slow_path import SlowPathNotice
from app.views.dialogs.file_dialogs import FolderMemory
from engine.types import ModelInfo


class ModelMenu(QObject):
    """The model button, its menu and the serve toggle of ``window``'s toolbar."""

    sig_model_requested = Signal(str)  # "bundled", a folder or a .gguf path
    sig_models_requested = Signal()  # open the Models window
    sig_endpoints_requested = Signal()  # open the remote endpoints dialog

    def __init__(self, window: QWidget, slow_path: SlowPathNotice, folders: FolderMemory) -> None:
        super().__init__(window)
        self._window = window
        self._folders = folders  # "Open GGUF file…" opens in the folder of the last one
        self._slow_path = slow_path
        self.button = QToolButton(window)
        self.button.setObjectName("modelButton")
        self.button.setText(QCoreApplication.translate("MainWindow", "Model: loading…"))
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu = QMenu(window)
        self.button.setMenu(self.menu)
        self.server_action = QAction(window)
        self.server_action.setObjectName("serverAction")
        self.server_action.setCheckable(True)
        self.set_server_port(0)
        self.set_recent_models([])

    def show_model(self, info: ModelInfo | None) -> None:
        """Name the loaded model on the button (or ask for one)."""
        if info is None:
            self.button.setText(
                QCoreApplication.translate("MainWindow", "Model: none — choose one")
            )
        else:
            self.button.setText(
                QCoreApplication.translate("MainWindow", "Model: {0}").format(info.name)
            )

    def set_recent_models(self, recent: list[str], labels: dict[str, str] | None = None) -> None:
        """Rebuild the model menu; ``labels`` maps a spec to its text (remote endpoints)."""
        labels = labels or {}
        menu = self.menu
        menu.clear()
        menu.addActions(self._slow_path.menu_actions())  # hidden unless on the slower path
        menu.addAction(
            QCoreApplication.translate("MainWindow", "Find and download models…"),
            self.sig_models_requested.emit,
        )
        menu.addAction(
            QCoreApplication.translate("MainWindow", "Bundled model (SmolLM2 135M)"),
            lambda: self.sig_model_requested.emit("bundled"),
        )
        menu.addAction(
            QCoreApplication.translate("MainWindow", "Open Hugging Face folder…"),
            self._on_open_folder,
        )
        menu.addAction(
            QCoreApplication.translate("MainWindow", "Open GGUF file…"), self._on_open_gguf
        )
        menu.addAction(
            QCoreApplication.translate("MainWindow", "Remote endpoints…"),
            self.sig_endpoints_requested.emit,
        )
        recent = [r for r in recent if r != "bundled"]
        if recent:
            menu.addSeparator()
            menu.addSection(QCoreApplication.translate("MainWindow", "Recent"))
            for spec in recent:
                label = labels.get(spec, spec)
                menu.addAction(label, partial(self.sig_model_requested.emit, spec))
        menu.addSeparator()
        menu.addAction(self.server_action)  # owned by the window: clear() keeps it alive

    def set_server_port(self, port: int) -> None:
        self.server_action.setText(
            QCoreApplication.translate(
                "MainWindow", "Serve the local engine on http://127.0.0.1:{0}/v1"
            ).format(port)
        )

    def set_serve_checked(self, on: bool) -> None:
        """Tick or untick the toggle without asking for a change (restore, failed start)."""
        self.server_action.blockSignals(True)
        self.server_action.setChecked(on)
        self.server_action.blockSignals(False)

    def _on_open_folder(self) -> None:
        path = self._folders.open_folder(
            self._window, "models", QCoreApplication.translate("MainWindow", "Open a model folder")
        )
        if path:
            self.sig_model_requested.emit(path)

    def _on_open_gguf(self) -> None:
        path = self._folders.open_file(
            self._window,
            "models",
            QCoreApplication.translate("MainWindow", "Open a GGUF model"),
            QCoreApplication.translate("MainWindow", "GGUF models (*.gguf)"),
        )
        if path:
            self.sig_model_requested.emit(path)
