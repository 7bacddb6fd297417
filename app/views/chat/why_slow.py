"""The status bar's "Why is this slow?" link and the short popup it opens.

Owns the link (shown after a reply when that reply ran well below this machine's estimate or
any measured cause is present, `app.chat.slowness.looks_slow`) and the popup: each cause in
plain words with what to do, or "Nothing slows Hearth down right now" with the figures
measured. Does not own measuring (`app.chat.slowness_watch.SlowWatch`), the diagnosis
(`app.chat.slowness`) or where the link sits (`app.views.chat.status_bar`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtWidgets import QMessageBox, QToolButton, QWidget

from app.bridge import governor_reading
from app.chat.slowness import GIB, SlowFacts, diagnose, looks_slow
from app.chat.slowness_watch import SlowWatch
from app.system.paths import data_dir
from engine.types import ModelInfo


def _translate(context: str, text: str) -> str:
    """The diagnosis's words, marked with ``QT_TRANSLATE_NOOP("WhySlow", ...)`` where they are
    written (`app.chat.slowness`), are looked up under that context."""
    return QCoreApplication.translate("WhySlow", text)


class WhySlowNotice(QObject):
    """The link, the facts of the last look, and the popup listing their causes."""

    def __init__(self, parent: QWidget, watch: SlowWatch | None = None) -> None:
        super().__init__(parent)
        self._window = parent
        self.watch = watch or SlowWatch(Path(data_dir()), governor_reading)
        self.facts = SlowFacts()
        self.box: QMessageBox | None = None  # the popup open now (tests read it)
        self.button = QToolButton(parent)
        self.button.setObjectName("whySlowButton")
        self.button.setAutoRaise(True)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.setText(self.tr("Why is this slow?"))
        self.button.setStyleSheet("text-decoration: underline;")
        self.button.clicked.connect(self.on_button_clicked)
        self.button.setVisible(False)

    def look(self, info: ModelInfo | None, stats: Mapping[str, object]) -> SlowFacts:
        """Measure now (after a reply, or a model loaded) and show the link if it is slow."""
        self.facts = self.watch.look(info, stats)
        self.button.setVisible(looks_slow(self.facts))
        return self.facts

    def lines(self) -> list[str]:
        """The popup's text: each cause and its action, or the figures when there is none."""
        found = diagnose(self.facts, _translate)
        if found:
            return [
                self.tr("{0}\n→ {1}").format(slowdown.cause, slowdown.action) for slowdown in found
            ]
        return [self.tr("Nothing slows Hearth down right now."), self._figures()]

    def _figures(self) -> str:
        f = self.facts
        speed = f"{f.decode_tok_s:.1f}" if f.decode_tok_s else "?"
        expected = f"{f.expected_tok_s:.1f}" if f.expected_tok_s else "?"
        disk = f"{f.disk_free_bytes / GIB:.1f}" if f.disk_free_bytes is not None else "?"
        cores = f"{f.threads} / {f.cores}" if f.cores else "?"
        return self.tr(
            "Last reply: {0} tokens/s (expected about {1}). Free memory: {2:.1f} GB. "
            "Free disk: {3} GB. Cores in use: {4}."
        ).format(speed, expected, f.available_bytes / GIB, disk, cores)

    def on_button_clicked(self) -> None:
        """Open the popup; open(), not exec(): no nested event loop."""
        box = QMessageBox(self._window)
        box.setObjectName("whySlowDialog")
        box.setIcon(QMessageBox.Icon.Information)
        box.setWindowTitle(self.tr("Why is this slow?"))
        box.setText("\n\n".join(self.lines()))
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.destroyed.connect(self._on_box_destroyed)
        self.box = box
        box.open()

    def _on_box_destroyed(self) -> None:
        self.box = None
