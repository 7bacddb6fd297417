"""The one-time notice that Chinese typing will not work until a package is installed.

Owns the wording and showing it once (remembered in `Settings`); the detection and the command
come from `app.system.input_method`. Non-modal: the user can chat (in English) at once.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from app.system.input_method import InputMethodStatus
from app.system.settings import Settings

NOTICE_KEY = "input_method"


def advise_input_method(
    parent: QWidget, status: InputMethodStatus, settings: Settings
) -> QMessageBox | None:
    """Show the advice in ``status`` unless there is none or it was shown before."""
    if not status.advice or settings.notice_shown(NOTICE_KEY):
        return None
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Information)
    box.setWindowTitle(QCoreApplication.translate("InputMethodNotice", "Chinese input"))
    box.setText(
        QCoreApplication.translate("InputMethodNotice", "Typing Chinese needs one more package")
    )
    box.setInformativeText(
        QCoreApplication.translate(
            "InputMethodNotice",
            "Your input method (fcitx5) is running, but Hearth's Qt has no module to reach it, "
            "so typing Chinese will not work here. Install it, then restart Hearth:\n\n{0}",
        ).format(status.advice)
    )
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # copy the command
    box.setAccessibleName(QCoreApplication.translate("InputMethodNotice", "Chinese input"))
    settings.set_notice_shown(NOTICE_KEY)
    box.open()
    return box
