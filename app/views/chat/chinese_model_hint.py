"""The strip above the composer that points a Chinese writer from the bundled model to Qwen3.5.

The bundled 135M model barely knows Chinese: asked in Chinese, it answers with nonsense that
ends in "；；；；" until the token limit, and that was a Chinese-speaking user's first
impression. On the first message with Chinese in it sent to the bundled model, this strip says
so and offers the catalogue's Qwen3.5 (``sig_catalogue_requested`` with the family; the
application opens the Models window on it). Shown at most once a run; Dismiss hides it for
good (remembered in `app.system.settings`). Does not own the Models window or downloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QLocale, Qt, Signal
from PySide6.QtWidgets import QBoxLayout, QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy

from app.chat.chinese_text import contains_chinese

if TYPE_CHECKING:
    from app.system.settings import Settings
    from app.views.main_window import MainWindow

HINT = "chinese_model"  # the name Dismiss is remembered under
FAMILY = "Qwen3.5"  # the catalogue family offered: good at Chinese, small sizes first
BUNDLED = "bundled"


class ChineseModelHint(QFrame):
    sig_catalogue_requested = Signal(str)  # the catalogue family to show

    def __init__(self, window: MainWindow, settings: Settings) -> None:
        super().__init__(window)
        self.setObjectName("chineseModelHint")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.session, self.settings = window.session, settings
        self._shown_once = False
        text = self.tr(
            "The built-in model is small and barely knows Chinese: its Chinese replies are "
            "often nonsense. Qwen3.5 from the catalogue answers Chinese well."
        )
        if QLocale().language() != QLocale.Language.Chinese:  # say it in Chinese too
            text += "\n内置模型很小，几乎不懂中文，中文回答常常不通。目录里的 Qwen3.5 中文很好。"
        self.label = QLabel(text, self)
        self.label.setObjectName("chineseModelHintLabel")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.get_button = QPushButton(self.tr("Get Qwen3.5…"), self)
        self.get_button.setObjectName("chineseModelHintGet")
        self.dismiss_button = QPushButton(self.tr("Dismiss"), self)
        self.dismiss_button.setObjectName("chineseModelHintDismiss")
        self.dismiss_button.setToolTip(self.tr("Do not show this again"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.get_button)
        layout.addWidget(self.dismiss_button)
        self.setAccessibleDescription(text)
        self.get_button.clicked.connect(self.on_get_clicked)
        self.dismiss_button.clicked.connect(self.on_dismiss_clicked)
        self.setVisible(False)

    def on_composer_send_requested(self, text: str) -> None:
        """A message is being sent: Chinese to the bundled model shows the strip (once)."""
        if self._shown_once or self.settings.hint_dismissed(HINT) or not contains_chinese(text):
            return
        info = self.session.model_info
        bundled = self.session.model_spec == BUNDLED or (
            info is not None and info.source == BUNDLED
        )
        if bundled:
            self._shown_once = True
            self.setVisible(True)

    def on_get_clicked(self) -> None:
        self.setVisible(False)
        self.sig_catalogue_requested.emit(FAMILY)

    def on_dismiss_clicked(self) -> None:
        self.settings.dismiss_hint(HINT)
        self.setVisible(False)


def install_chinese_model_hint(window: MainWindow, settings: Settings) -> ChineseModelHint:
    """Put the strip right above the composer and watch what is sent."""
    hint = ChineseModelHint(window, settings)
    parent = window.composer.parentWidget()
    column = parent.layout() if parent is not None else None
    assert isinstance(column, QBoxLayout)  # the chat column stacks transcript, bars, composer
    column.insertWidget(column.indexOf(window.composer), hint)
    window.composer.sig_send_requested.connect(hint.on_composer_send_requested)
    return hint
