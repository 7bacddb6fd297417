"""The download dialog: one model file from the Hub into Hearth's models folder (for a model
that can see, with its vision projector after it, into the same folder, each verified).

Shows the file, a progress bar, bytes done, speed and time left, and the phase the engine is
in (checking free disk space, downloading, checking sha256, done). Cancel pauses: the partial
file stays, and Resume (now, or after a restart from the models dialog) continues where it
stopped. Errors are shown in plain words (`app.views.models.format.hub_error_text`); a gated
repository offers the Hub token field. On success, "Use this model" emits
``sig_use_requested(path)``.

Does not own the download itself (`app.hub.downloads.DownloadJob` over
`engine.hub.download`) or what "use" means (the composition root loads the model).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.hub.downloads import DownloadFn, DownloadJob, HubAccess
from app.hub.progress import RateMeter
from app.views.models.format import format_bytes, format_eta, format_speed, hub_error_text
from engine.errors import DownloadCancelled


class Phase(Enum):
    READY = "ready"
    RUNNING = "running"
    VERIFYING = "verifying"
    PAUSED = "paused"
    FAILED = "failed"
    DONE = "done"


class DownloadDialog(QDialog):
    """Download, verify and place one `HubFile`; resumable, cancellable."""

    sig_use_requested = Signal(str)  # the downloaded model's path
    sig_downloaded = Signal(str)  # a model arrived in the folder (the list refreshes)
    sig_token_requested = Signal()  # a gated repo: show the Hub token field

    def __init__(
        self,
        file: Any,
        access: HubAccess,
        parent: QWidget | None = None,
        *,
        dest_dir: Path | None = None,
        download_fn: DownloadFn | None = None,
        already: int = 0,
        projector: Any = None,
        chat_model: bool = True,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("downloadDialog")
        self.setWindowTitle(self.tr("Download model"))
        self.setMinimumWidth(520)
        self.file = file
        self.projector = projector  # a HubFile fetched after the model, or None
        self.chat_model = chat_model  # False: a guard model, never offered for chatting
        self.path: Path | None = None
        self.phase = Phase.READY
        self._receiving = False
        self._meter = RateMeter()
        self._job = DownloadJob(
            file,
            access,
            on_progress=self.on_job_progress,
            dest_dir=dest_dir,
            download_fn=download_fn,
            projector=projector,
        )
        self._build()
        self._show_bytes(already, self._total())
        self._set_phase(Phase.READY, self.tr("Ready to download."))

    def _build(self) -> None:
        title = QLabel(self)
        title.setText(self.file.filename)  # a file name: shown as it is, never as rich text
        title.setTextFormat(Qt.TextFormat.PlainText)
        font = title.font()
        font.setBold(True)
        title.setFont(font)
        title.setWordWrap(True)
        origin = QLabel(
            self.tr("{0} · {1}").format(self.file.repo_id, format_bytes(self._total())), self
        )
        origin.setTextFormat(Qt.TextFormat.PlainText)
        self.projector_label = QLabel(self)
        self.projector_label.setObjectName("downloadProjector")
        self.projector_label.setTextFormat(Qt.TextFormat.PlainText)
        self.projector_label.setWordWrap(True)
        self.projector_label.setVisible(self.projector is not None)
        if self.projector is not None:
            self.projector_label.setText(
                self.tr("with its vision projector {0} ({1}), so the model can see").format(
                    self.projector.filename, format_bytes(self.projector.size_bytes)
                )
            )
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bytes_label = QLabel(self)
        self.bytes_label.setObjectName("downloadBytes")
        self.status = QLabel(self)
        self.status.setObjectName("downloadStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cancel_button = QPushButton(self.tr("Cancel"), self)
        self.resume_button = QPushButton(self.tr("Resume"), self)
        self.token_button = QPushButton(self.tr("Enter Hub token…"), self)
        self.use_button = QPushButton(self.tr("Use this model"), self)
        self.close_button = QPushButton(self.tr("Close"), self)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for b in (self.token_button, self.cancel_button, self.resume_button, self.use_button):
            buttons.addWidget(b)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        for w in (title, origin, self.projector_label, self.bar, self.bytes_label, self.status):
            layout.addWidget(w)
        layout.addLayout(buttons)
        self.cancel_button.clicked.connect(self.on_cancel_clicked)
        self.resume_button.clicked.connect(self.start)
        self.use_button.clicked.connect(self.on_use_clicked)
        self.token_button.clicked.connect(self.sig_token_requested)
        self.close_button.clicked.connect(self.close)

    def _total(self) -> int:
        """Bytes of the model and its projector, as the Hub listed them."""
        extra = int(self.projector.size_bytes or 0) if self.projector is not None else 0
        return int(self.file.size_bytes or 0) + extra

    # ---- state ----------------------------------------------------------------------------

    def _set_phase(self, phase: Phase, text: str, *, token: bool = False) -> None:
        self.phase = phase
        self.status.setText(text)
        busy = phase in (Phase.RUNNING, Phase.VERIFYING)
        self.cancel_button.setVisible(busy)
        self.cancel_button.setEnabled(phase is Phase.RUNNING)
        self.resume_button.setVisible(phase in (Phase.READY, Phase.PAUSED, Phase.FAILED))
        self.resume_button.setText(
            self.tr("Download") if phase is Phase.READY else self.tr("Resume")
        )
        self.use_button.setVisible(phase is Phase.DONE and self.chat_model)
        self.token_button.setVisible(token)
        if phase is Phase.VERIFYING:
            self.bar.setRange(0, 0)  # hashing has no byte progress to show: a busy bar
        else:
            self.bar.setRange(0, 1000)

    def _show_bytes(self, done: int, total: int) -> None:
        if total > 0:
            self.bar.setValue(round(1000 * min(done, total) / total))
        parts = [self.tr("{0} of {1}").format(format_bytes(done), format_bytes(total))]
        if self.phase is Phase.RUNNING:
            parts.append(format_speed(self._meter.bytes_per_second()))
            parts.append(format_eta(self._meter.seconds_left(done, total)))
        self.bytes_label.setText(" · ".join(parts))

    # ---- slots ----------------------------------------------------------------------------

    def on_job_progress(self, done: int, total: int) -> None:
        if self.phase is not Phase.RUNNING:
            return
        if not self._receiving:  # first report: disk space was fine, a kept part re-hashed
            self._receiving = True
            self.status.setText(self.tr("Downloading…"))
        self._meter.add(done)
        self._show_bytes(done, total)
        if total and done >= total:  # all bytes in: the engine checks the sha256, then moves
            self._set_phase(Phase.VERIFYING, self.tr("Checking sha256…"))

    def on_cancel_clicked(self) -> None:
        self._job.cancel()
        self.cancel_button.setEnabled(False)
        self.status.setText(self.tr("Pausing…"))

    def on_use_clicked(self) -> None:
        if self.path is not None:
            self.sig_use_requested.emit(str(self.path))
            self.accept()

    @asyncSlot()
    async def start(self) -> None:
        await self.run_download()

    # ---- work -----------------------------------------------------------------------------

    async def run_download(self) -> Path | None:
        """Download (or resume) to the end; the final path, or None (paused or failed)."""
        if self._job.running:
            return None
        self._meter.reset()
        self._receiving = False
        self._set_phase(
            Phase.RUNNING, self.tr("Checking free disk space and any part already downloaded…")
        )
        try:
            self.path = await self._job.run()
        except DownloadCancelled:
            self._set_phase(
                Phase.PAUSED,
                self.tr("Paused. The part already downloaded is kept; Resume continues it."),
            )
            return None
        except Exception as exc:  # every engine.hub error carries a message a user can act on
            text, token = hub_error_text(exc)
            self._set_phase(Phase.FAILED, text, token=token)
            return None
        size = self._total() or self.path.stat().st_size
        self._show_bytes(size, size)
        done = self.tr("Downloaded and verified (sha256). Saved to {0}").format(self.path)
        if self._job.projector_path is not None:
            done += "\n" + self.tr("Its vision projector, verified too: {0}").format(
                self._job.projector_path.name
            )
        self._set_phase(Phase.DONE, done)
        self.sig_downloaded.emit(str(self.path))
        return self.path

    def closeEvent(self, event: QCloseEvent) -> None:
        # Closing pauses a running download (the partial file stays for a later resume).
        self._job.cancel()
        super().closeEvent(event)

    def reject(self) -> None:
        self._job.cancel()
        super().reject()
