"""The status bar's view of a model being opened: the step named, its bar, the time left.

Owns painting a `LoadDisplay` (from `app.chat.load_progress.LoadTracker`) into a label, a
progress bar and a time label: the stage's translated name with the engine's words for the
step, a bar that is busy (animated, no number) where no fraction is known, and "about N s left"
(or, with no estimate yet, how long the step has run, so a slow step never looks frozen). A
one-second timer moves the time on between reports. Does not own the rules (monotonic per
step, the estimate: the tracker) or the status bar's layout (`MainWindow`).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel, QProgressBar

from app.chat.load_progress import LoadDisplay, LoadTracker
from engine.types import LoadProgress

TICK_MS = 1000
SHOW_ELAPSED_AFTER_S = 2.0  # a busy step says how long it has run once it takes this long


# A path the engine quoted or wrote out ('/home/me/models/x.gguf', C:\\m\\x.gguf): the status
# bar shows its last part, the file's name; the whole message is in the label's tooltip.
_QUOTED_PATH = re.compile(r"""(['"])((?:[A-Za-z]:)?[\\/][^'"]*)\1""")
_BARE_PATH = re.compile(r"(?<!\S)(?:[A-Za-z]:)?[\\/]\S*[\\/]\S+")


def file_names_only(message: str) -> str:
    """``message`` with every absolute path in it replaced by the file's name, unquoted."""

    def name(path: str) -> str:
        return re.split(r"[\\/]", path.rstrip("\\/"))[-1] or path

    message = _QUOTED_PATH.sub(lambda m: name(m.group(2)), message)
    return _BARE_PATH.sub(lambda m: name(m.group(0)), message)


class LoadProgressView(QObject):
    def __init__(
        self, label: QLabel, bar: QProgressBar, time_label: QLabel, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.label, self.bar, self.time_label = label, bar, time_label
        self.tracker = LoadTracker()
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        self.time_label.setObjectName("loadTimeLabel")
        self.time_label.setVisible(False)

    def start(self) -> None:
        """A load began: a busy bar until the engine reports a measure."""
        self.tracker.reset()
        self.bar.setRange(0, 0)
        self.bar.setVisible(True)
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self.tracker.reset()
        self.bar.setVisible(False)
        self.time_label.setVisible(False)
        self.label.setToolTip("")

    def on_progress(self, progress: LoadProgress) -> None:
        if not self._timer.isActive():
            self.start()
        self.show_display(self.tracker.update(progress))

    def show_display(self, shown: LoadDisplay) -> None:
        self.bar.setVisible(True)
        if shown.overall <= 0.0 and shown.fraction is None:
            self.bar.setRange(0, 0)  # busy: Qt animates it until anything is measured
        else:
            # One bar for the whole open (the tracker's ``overall``), not one per step.
            self.bar.setRange(0, 100)
            self.bar.setValue(round(shown.overall * 100))
        text = self.step_text(shown)
        self.label.setText(text)
        self.label.setToolTip(shown.message)
        self.bar.setAccessibleDescription(text)
        time_text = self.time_text(shown)
        self.time_label.setText(time_text)
        self.time_label.setVisible(bool(time_text))

    def step_text(self, shown: LoadDisplay) -> str:
        name = self.stage_name(shown.stage)
        message = file_names_only(shown.message)
        if shown.stage == "convert":  # the stage's name already says it happens once
            message = message.replace(" (once)", "").replace("(once)", "").strip()
        if not message or message.casefold() == name.casefold():
            return name
        # "Finding the model: Finding model …" said the verb twice: the engine's own words
        # stand alone when they start as the step's name does.
        if message.split()[0].casefold() == name.split()[0].casefold():
            return message
        return self.tr("{0}: {1}").format(name, message)

    def stage_name(self, stage: str) -> str:
        names = {
            "resolve": self.tr("Finding the model"),
            "convert": self.tr("Preparing (once)"),
            "load": self.tr("Opening"),
            "warmup": self.tr("Warming up"),
            "ready": self.tr("Ready"),
        }
        return names.get(stage, stage)

    def time_text(self, shown: LoadDisplay) -> str:
        if shown.eta_s is not None:
            seconds = round(shown.eta_s)
            if seconds >= 90:
                return self.tr("about {0} min left").format(round(seconds / 60))
            return self.tr("about {0} s left").format(max(1, seconds))
        if shown.step_elapsed_s >= SHOW_ELAPSED_AFTER_S and shown.stage != "ready":
            return self.tr("{0} s so far").format(int(shown.step_elapsed_s))
        return ""

    def _on_timer_timeout(self) -> None:
        shown = self.tracker.display()
        if shown.stage:  # nothing reported yet: the busy bar alone
            self.show_display(shown)
