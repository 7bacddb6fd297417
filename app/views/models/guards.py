"""The catalogue's "Safety" section: guard models for the safety review, apart from chat models.

Lists each `engine.hub.guard_models.GuardModel` (name, size, what it is for, its licence, and
that its file name was not checked online) with "Download…", or "Downloaded" once its file is
in the guards folder. "Download…" emits ``sig_download_requested(HubFile)``; the Models window
downloads it like any model (resumable, sha256-verified) into the guards folder, from which
Preferences → Safety review offers it. Does not own the download or the review.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QPushButton, QWidget

from app.hub import hub_calls
from app.views.models.format import format_bytes


class GuardSection(QGroupBox):
    """One row per guard model: what it is, and its download button."""

    sig_download_requested = Signal(object)  # engine.hub.search.HubFile

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(self.tr("Safety: guard models for the safety review"), parent)
        self.setObjectName("guardSection")
        self.guards: list[Any] = []
        self.buttons: list[QPushButton] = []
        self._grid = QGridLayout(self)

    def show_guards(self) -> None:
        """(Re)build the rows from the catalogue and what is on disk now."""
        while self._grid.count():
            item = self._grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.guards, self.buttons = hub_calls.guard_models(), []
        installed = {g.repo_id for g, _path in hub_calls.downloaded_guards()}
        for row, guard in enumerate(self.guards):
            label = QLabel(self._guard_html(guard), self)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setWordWrap(True)
            label.setOpenExternalLinks(True)
            label.setToolTip(f"{guard.repo_id}/{guard.filename}")
            have = guard.repo_id in installed
            button = QPushButton(self.tr("Downloaded") if have else self.tr("Download…"), self)
            button.setEnabled(not have)
            button.clicked.connect(lambda _=False, g=guard: self.on_download_clicked(g))
            self._grid.addWidget(label, row, 0)
            self._grid.addWidget(button, row, 1, Qt.AlignmentFlag.AlignVCenter)
            self.buttons.append(button)
        self._grid.setColumnStretch(0, 1)

    def _guard_html(self, guard: Any) -> str:
        unchecked = (
            ""
            if guard.checked_online
            else " · " + html.escape(self.tr("file name as the publisher usually names it"))
        )
        licence = html.escape(self.tr("Licence: {0}").format(guard.licence))
        return (
            f"<b>{html.escape(guard.name)}</b> &nbsp;<span style='color:#777777;'>"
            f"{html.escape(guard.quant)} · {html.escape(format_bytes(guard.size_bytes))}</span>"
            f"<br><span style='color:#777777;'>{html.escape(guard.description)}<br>"
            f"{licence}{unchecked}</span>"
        )

    def on_download_clicked(self, guard: Any) -> None:
        self.sig_download_requested.emit(hub_calls.guard_file(guard))
