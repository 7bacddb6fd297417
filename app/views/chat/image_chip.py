"""One picture of the draft above the composer: a chip, first "reading…", then the picture.

Owns the chip's two states. While the picture is being read, checked and copied (on a worker
thread: `app.views.chat.image_chips`) it shows its name and "reading…" and can be removed;
once ready it shows the thumbnail, "≈ 280 tokens" and, where the model offers a choice, the
image-token budget (Gemma 4: 70 … 1,120, its default first). The token figure is the model's
typical image or the chosen budget until the engine has counted this picture (``counted``).
Does not own reading the picture, counting it or the row of chips.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QLocale, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.images import ImageAttachment
from engine.types import ModelInfo

CHIP_THUMB = 48  # px: the chip's thumbnail square


def grouped(count: int) -> str:
    """``count`` with its digits grouped the user's way ("1,120")."""
    locale = QLocale()
    if locale.language() == QLocale.Language.C:
        locale = QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)
    return locale.toString(count)


class ImageChip(QFrame):
    """One attached image: thumbnail, name, token cost, budget choice, remove."""

    sig_remove_requested = Signal()
    sig_budget_changed = Signal()

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageChip")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.image: ImageAttachment | None = None  # None while it is being read
        self.counted: dict[int | None, int] = {}  # the engine's count by budget
        self.default_tokens = 0
        self._budgets: tuple[int, ...] = ()
        self.thumb = QLabel(self)
        self.thumb.setFixedSize(CHIP_THUMB, CHIP_THUMB)
        self.thumb.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.thumb.setText("…")
        self.name = QLabel(self)
        self.name.setText(self.fontMetrics().elidedText(name, Qt.TextElideMode.ElideMiddle, 150))
        self.tokens = QLabel(self)
        self.tokens.setObjectName("imageTokens")
        self.tokens.setText(self.tr("reading…"))
        self.tokens.setToolTip(self.tr("The picture is being read and checked"))
        self.budget = QComboBox(self)
        self.budget.setObjectName("imageBudget")
        self.budget.setToolTip(
            self.tr(
                "How many tokens this picture may take: more reads small text better, "
                "takes more of the context and longer to encode"
            )
        )
        self.budget.setAccessibleName(self.tr("Image token budget"))
        self.budget.setVisible(False)
        self.budget.currentIndexChanged.connect(self._on_budget_changed)
        self.remove = QToolButton(self)
        self.remove.setObjectName("removeImage")
        self.remove.setText("✕")
        self.remove.setAutoRaise(True)
        self.remove.setToolTip(self.tr("Remove this image"))
        self.remove.setAccessibleName(self.tr("Remove image {0}").format(name))
        self.remove.clicked.connect(self.sig_remove_requested)
        facts = QHBoxLayout()
        facts.setSpacing(4)
        facts.addWidget(self.tokens)
        facts.addWidget(self.budget)
        text = QVBoxLayout()
        text.setSpacing(0)
        text.addWidget(self.name)
        text.addLayout(facts)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 4, 2, 4)
        row.setSpacing(6)
        row.addWidget(self.thumb)
        row.addLayout(text)
        row.addWidget(self.remove, 0, Qt.AlignmentFlag.AlignTop)

    @property
    def pending(self) -> bool:
        """Still being read (nothing to send yet)."""
        return self.image is None

    def set_ready(self, image: ImageAttachment, picture: QImage) -> None:
        """The picture was read and kept: show it (``picture``: its thumbnail, read off the
        GUI thread) and offer the model's budgets."""
        self.image = image
        self.thumb.setText("")
        if not picture.isNull():
            self.thumb.setPixmap(QPixmap.fromImage(picture))
        self.thumb.setToolTip(f"{image.name} · {image.width} × {image.height}")
        self.tokens.setToolTip("")
        self._offer_budgets()

    def set_model(self, info: ModelInfo | None) -> None:
        """Offer ``info``'s budgets (its default first and preselected) and price the image."""
        self._budgets = info.image_budgets if info is not None else ()
        self.default_tokens = info.image_tokens if info is not None else 0
        self.counted.clear()
        if self.image is not None:
            self._offer_budgets()

    def set_locked(self, locked: bool) -> None:
        """The draft waits to be sent as it is: no removing, no other budget."""
        self.remove.setEnabled(not locked)
        self.budget.setEnabled(not locked)

    def _offer_budgets(self) -> None:
        assert self.image is not None
        budgets = self._budgets
        self.budget.blockSignals(True)
        self.budget.clear()
        for i, budget in enumerate(budgets):
            label = self.tr("up to {0}").format(grouped(budget))
            self.budget.addItem(label + (self.tr(" (default)") if i == 0 else ""), budget)
        chosen = self.image.budget
        self.budget.setCurrentIndex(max(0, budgets.index(chosen)) if chosen in budgets else 0)
        self.budget.blockSignals(False)
        self.budget.setVisible(bool(budgets))
        self.image = dataclasses.replace(self.image, budget=self.chosen_budget())
        self.show_tokens()

    def chosen_budget(self) -> int | None:
        """The budget picked in the box; None for the model's default (or no choice)."""
        if self.budget.count() == 0 or self.budget.currentIndex() <= 0:
            return None
        value = self.budget.currentData()
        return int(value) if value is not None else None

    def token_cost(self) -> int:
        """The engine's count at the chosen budget if it has come, else an estimate (the
        model's typical picture while this one is being read)."""
        if self.image is None:
            return self.default_tokens
        budget = self.image.budget
        if budget in self.counted:
            return self.counted[budget]
        return budget if budget is not None else self.default_tokens

    def show_tokens(self) -> None:
        if self.image is None:
            return  # "reading…" until it is ready
        cost = self.token_cost()
        self.tokens.setText(self.tr("≈ {0} tokens").format(grouped(cost)) if cost else "")

    def _on_budget_changed(self, _index: int) -> None:
        if self.image is None:
            return
        self.image = dataclasses.replace(self.image, budget=self.chosen_budget())
        self.show_tokens()
        self.sig_budget_changed.emit()
