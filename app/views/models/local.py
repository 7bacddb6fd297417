"""The "On this computer" tab: models in Hearth's folder and those other apps downloaded.

Lists each GGUF with its source (Hearth, LM Studio, GPT4All, Ollama), size, architecture,
quant, RAM estimate, last use and "can see" where a vision projector pairs with it (its path
in the tooltip; projectors themselves are never rows) (`engine.hub.library.list_models`, on a
worker thread), and
offers Use (``sig_use_requested(path)``: loaded as "Open GGUF file" loads it), Delete (Hearth's
own folder only, after a confirmation) and Reveal in the file manager. Other apps' files are
offered in place, never copied or deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.hub import hub_calls
from app.views.models.format import (
    format_bytes,
    last_used_text,
    source_label,
)

_PATH_ROLE = Qt.ItemDataRole.UserRole
COLUMNS = 8


class LocalModelsTab(QWidget):
    """Models on this computer: list, use, delete (Hearth's own), reveal."""

    sig_use_requested = Signal(str)  # a .gguf path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("localModelsTab")
        self.models: list[Any] = []
        self.confirm_box: QMessageBox | None = None
        # The loaded model's file, listed even when it lies outside every models folder.
        self.in_use: Callable[[], str] = lambda: ""
        self._build()

    def _build(self) -> None:
        self.table = QTableWidget(0, COLUMNS, self)
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Model"),
                self.tr("From"),
                self.tr("Architecture"),
                self.tr("Quant"),
                self.tr("Size"),
                self.tr("RAM needed"),
                self.tr("Last used"),
                self.tr("Images"),
            ]
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, COLUMNS):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.status = QLabel(self)
        self.status.setObjectName("localStatus")
        self.status.setWordWrap(True)
        self.use_button = QPushButton(self.tr("Use"), self)
        self.delete_button = QPushButton(self.tr("Delete…"), self)
        self.reveal_button = QPushButton(self.tr("Show in folder"), self)
        self.refresh_button = QPushButton(self.tr("Refresh"), self)
        buttons = QHBoxLayout()
        for b in (self.use_button, self.delete_button, self.reveal_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda _item: self.on_use_clicked())
        self.use_button.clicked.connect(self.on_use_clicked)
        self.delete_button.clicked.connect(self.on_delete_clicked)
        self.reveal_button.clicked.connect(self.on_reveal_clicked)
        self.refresh_button.clicked.connect(self.on_refresh_clicked)
        self._update_buttons()

    # ---- loading --------------------------------------------------------------------------

    @asyncSlot()
    async def on_refresh_clicked(self) -> None:
        await self.refresh()

    async def refresh(self) -> list[Any]:
        """List the models again (on a worker thread: headers are parsed on first sight)."""
        self.status.setText(self.tr("Looking for models…"))
        try:
            models = await hub_calls.local_models(self.in_use())
        except Exception as exc:  # the engine's message says what went wrong
            self.status.setText(self.tr("The models could not be listed: {0}").format(exc))
            return []
        self.show_models(models)
        return models

    def show_models(self, models: list[Any]) -> None:
        self.models = list(models)
        self.table.setRowCount(len(self.models))
        loaded = _resolved(self.in_use())
        for row, m in enumerate(self.models):
            unreadable = getattr(m, "unreadable", "")
            cells = [
                shown_name(m),
                source_label(m.source),
                self.tr("unreadable") if unreadable else m.architecture,
                m.quantization,
                format_bytes(m.size_bytes),
                format_bytes(m.ram_estimate_bytes),
                # The loaded model is in use now, whatever was recorded ("Never" beside
                # "Loaded now" for the same file read as a contradiction).
                self.tr("Now")
                if loaded and _resolved(m.path) == loaded
                else last_used_text(m.last_used),
                self.tr("can see") if getattr(m, "mmproj", "") else "",
            ]
            tip = m.path
            if m.name and m.name != shown_name(m):
                tip += "\n" + self.tr("Named in the file: {0}").format(m.name)
            if getattr(m, "licence", ""):
                tip += "\n" + self.tr("Licence stated in the file: {0}.").format(m.licence)
            if getattr(m, "mmproj", ""):
                tip += "\n" + self.tr("Reads images with its vision projector: {0}").format(
                    m.mmproj
                )
            if unreadable:  # a hostile or broken header: shown, never hiding the rest
                tip += "\n" + self.tr("This file cannot be used: {0}").format(unreadable)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(_PATH_ROLE, m.path)
                item.setToolTip(tip)
                self.table.setItem(row, col, item)
        if self.models:
            self.status.setText(self.tr("%n model(s) on this computer.", "", len(self.models)))
        else:
            self.status.setText(
                self.tr(
                    "No models yet: download one from the Catalogue tab. They go to {0}"
                ).format(hub_calls.models_dir())
            )
        self._update_buttons()

    # ---- actions --------------------------------------------------------------------------

    def selected(self) -> Any | None:
        rows = self.table.selectionModel().selectedRows()
        return self.models[rows[0].row()] if rows else None

    def select_path(self, path: str) -> bool:
        for row, m in enumerate(self.models):
            if m.path == path:
                self.table.selectRow(row)
                return True
        return False

    def _update_buttons(self) -> None:
        m = self.selected()
        self.use_button.setEnabled(m is not None and not getattr(m, "unreadable", ""))
        self.reveal_button.setEnabled(m is not None)
        self.delete_button.setEnabled(m is not None and m.source == "hearth")
        self.delete_button.setToolTip(
            ""
            if m is None or m.source == "hearth"
            else self.tr("Only models in Hearth's own folder can be deleted here.")
        )

    def on_use_clicked(self) -> None:
        m = self.selected()
        if m is None:
            return
        self.sig_use_requested.emit(m.path)  # the window records the use and loads it

    def on_reveal_clicked(self) -> None:
        m = self.selected()
        if m is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(m.path).parent)))

    def on_delete_clicked(self) -> None:
        m = self.selected()
        if m is None or m.source != "hearth":
            return
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            self.tr("Delete model"),
            self.tr("Delete {0} ({1}) from this computer?").format(
                Path(m.path).name, format_bytes(m.size_bytes)
            ),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("deleteModelBox")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.accepted.connect(lambda: self.delete_confirmed(m.path))
        self.confirm_box = box
        box.open()  # not exec(): a nested event loop would re-enter asyncio

    def delete_confirmed(self, path: str) -> bool:
        try:
            deleted = hub_calls.delete_model(path)
        except Exception as exc:  # the engine's message says what and why
            self.status.setText(self.tr("Not deleted: {0}").format(exc))
            return False
        self.show_models([m for m in self.models if m.path != path])
        if len(deleted) > 1:  # its projector too: no other model here used it
            self.status.setText(
                self.tr("Deleted {0} and its vision projector {1}.").format(
                    Path(path).name, deleted[1].name
                )
            )
        else:
            self.status.setText(self.tr("Deleted {0}.").format(Path(path).name))
        return True


def shown_name(model: Any) -> str:
    """A downloaded or opened file is listed as the file the user chose ("Qwen3-4B-Q4_K_M"),
    not as its ``general.name`` ("Smollm2 135M 8k Lc100K Mix1 Ep2"); other apps' models keep
    the names those apps gave them."""
    if model.source in ("hearth", "in use"):
        return Path(model.path).stem
    return str(model.name)


def _resolved(path: str) -> str:
    """``path`` made absolute with links followed, for comparing two spellings of one file."""
    if not path:
        return ""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return path
