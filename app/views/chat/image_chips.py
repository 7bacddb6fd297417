"""The draft's images above the composer: one chip each, and the line saying why one was not.

Owns, for the message being written: attaching images (a file, a drop or a paste, through
`app.chat.images.attach_image`, which checks and stores them), one chip per image — thumbnail,
name, "≈ 280 tokens", the image-token budget where the model offers a choice (Gemma 4: 70 …
1,120, its default first) and a remove button — and one line of error (a corrupt file, a
model that cannot see) that never touches the typed text. The token figure is the model's
typical image (`ModelInfo.image_tokens`) or the chosen budget until the engine has counted
this picture at its size (``counter``, given by the window: `EngineBridge.count_tokens`).
Does not own sending (the composer hands `attachments` to `ChatSession.send`) nor reading
the pixels (`app.views.chat.image_pixels`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QLocale, Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.images import ImageAttachment, ImageError, attach_image
from app.views.chat.image_pixels import thumbnail
from engine.types import ModelInfo

CHIP_THUMB = 48  # px: the chip's thumbnail square
# What the attach button's file dialog offers (HEIC where Pillow reads it).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".heic", ".heif")
# The engine's pricing of one image at a budget: an awaitable so the count runs on its thread.
ImageCounter = Callable[[ImageAttachment], Awaitable[int]]
# The engine's reasons (`ModelInfo.vision_refusal`) marked for translation: one shown is
# looked up by its English words, and any other is shown as the engine wrote it.
_REASONS = (
    QT_TRANSLATE_NOOP("ImageChips", "this model has no vision projector"),
    QT_TRANSLATE_NOOP("ImageChips", "this model has no vision projector — download its mmproj"),
)


def is_image_file(path: str | Path) -> bool:
    """A file the chat takes as a picture (by its name; `attach_image` checks the bytes)."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


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

    def __init__(self, image: ImageAttachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageChip")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.image = image
        self.counted: dict[int | None, int] = {}  # the engine's count by budget
        self.default_tokens = 0
        self.thumb = QLabel(self)
        self.thumb.setFixedSize(CHIP_THUMB, CHIP_THUMB)
        self.thumb.setAlignment(Qt.AlignmentFlag.AlignCenter)
        picture = thumbnail(image.path, CHIP_THUMB)
        if not picture.isNull():
            self.thumb.setPixmap(QPixmap.fromImage(picture))
        self.thumb.setToolTip(f"{image.name} · {image.width} × {image.height}")
        self.name = QLabel(self)
        self.name.setText(
            self.fontMetrics().elidedText(image.name, Qt.TextElideMode.ElideMiddle, 150)
        )
        self.tokens = QLabel(self)
        self.tokens.setObjectName("imageTokens")
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
        self.remove.setAccessibleName(self.tr("Remove image {0}").format(image.name))
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

    def set_model(self, info: ModelInfo | None) -> None:
        """Offer ``info``'s budgets (its default first and preselected) and price the image."""
        budgets = info.image_budgets if info is not None else ()
        self.default_tokens = info.image_tokens if info is not None else 0
        self.counted.clear()
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
        """The engine's count at the chosen budget if it has come, else an estimate."""
        budget = self.image.budget
        if budget in self.counted:
            return self.counted[budget]
        return budget if budget is not None else self.default_tokens

    def show_tokens(self) -> None:
        cost = self.token_cost()
        self.tokens.setText(self.tr("≈ {0} tokens").format(grouped(cost)) if cost else "")

    def _on_budget_changed(self, _index: int) -> None:
        self.image = dataclasses.replace(self.image, budget=self.chosen_budget())
        self.show_tokens()
        self.sig_budget_changed.emit()


class ImageChips(QWidget):
    """The row of the draft's image chips and its one error line; hidden while empty."""

    sig_changed = Signal()  # an image was added or removed, or its budget changed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageChips")
        self.images_folder: Path | None = None  # where attached copies go (None: the data folder)
        self.counter: ImageCounter | None = None
        self.chips: list[ImageChip] = []
        self.info: ModelInfo | None = None
        self.error_label = QLabel(self)
        self.error_label.setObjectName("imageError")
        self.error_label.setStyleSheet("color: #c01c28")
        self.error_label.setWordWrap(True)
        self._row = QHBoxLayout()
        self._row.setSpacing(6)
        self._row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(2)
        layout.addLayout(self._row)
        layout.addWidget(self.error_label)
        self._tasks: set[asyncio.Task[None]] = set()
        self._update_visible()

    # -- the model --------------------------------------------------------------------------
    def set_model(self, info: ModelInfo | None) -> None:
        """The model the draft goes to: its budgets and costs; a text-only one's reason."""
        self.info = info
        for chip in self.chips:
            chip.set_model(info)
            self._count(chip)
        self.show_error(self.refusal() if self.chips else "")
        self.sig_changed.emit()

    def refusal(self) -> str:
        """Why the model takes no images, in the user's language where it is one of the
        engine's known reasons ("" when it can see, or before a model is known: a message
        sent while one opens waits for it, and the engine refuses then)."""
        reason = self.info.vision_refusal if self.info is not None else ""
        return QCoreApplication.translate("ImageChips", reason) if reason else ""

    # -- the draft's images -----------------------------------------------------------------
    def add(self, sources: Sequence[Path | str | bytes], name: str = "") -> list[ImageAttachment]:
        """Attach each of ``sources`` (files, or an image's encoded bytes named ``name``);
        one that cannot be attached says why in the error line and the rest go on."""
        if self.refusal():
            self.show_error(
                self.tr("Images cannot be sent to this model: {0}").format(self.refusal())
            )
            return []
        added, errors = [], []
        for source in sources:
            try:
                image = attach_image(
                    source if isinstance(source, bytes) else Path(source),
                    name=name,
                    images_folder=self.images_folder,
                )
            except ImageError as exc:
                errors.append(str(exc))
                continue
            added.append(image)
            self._add_chip(image)
        self.show_error("\n".join(errors))
        if added:
            self.sig_changed.emit()
        return added

    def _add_chip(self, image: ImageAttachment) -> None:
        chip = ImageChip(image, self)
        chip.set_model(self.info)
        chip.sig_remove_requested.connect(lambda c=chip: self.remove(self.chips.index(c)))
        chip.sig_budget_changed.connect(lambda c=chip: self._on_budget_changed(c))
        self._row.insertWidget(len(self.chips), chip)
        self.chips.append(chip)
        self._count(chip)
        self._update_visible()

    def remove(self, index: int) -> None:
        chip = self.chips.pop(index)
        self._row.removeWidget(chip)
        chip.deleteLater()
        self.show_error("")
        self.sig_changed.emit()

    def clear(self) -> None:
        """Forget the draft's images (the message was sent with them)."""
        for chip in self.chips:
            self._row.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        self.show_error("")
        self.sig_changed.emit()

    def attachments(self) -> tuple[ImageAttachment, ...]:
        """The images to send, each with the budget chosen on its chip."""
        return tuple(chip.image for chip in self.chips)

    def tokens(self) -> int:
        """What the draft's images will take of the context (counted or estimated)."""
        return sum(chip.token_cost() for chip in self.chips)

    def show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self._update_visible()

    # -- counting ---------------------------------------------------------------------------
    def _on_budget_changed(self, chip: ImageChip) -> None:
        self._count(chip)
        self.sig_changed.emit()

    def _count(self, chip: ImageChip) -> None:
        """Ask the engine what this picture costs at its budget (in the background)."""
        budget = chip.image.budget
        if self.counter is None or self.refusal() or budget in chip.counted:
            return
        try:
            task = asyncio.ensure_future(self._counted(chip, chip.image))
        except RuntimeError:  # no event loop (a widget alone): the estimate stays
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _counted(self, chip: ImageChip, image: ImageAttachment) -> None:
        assert self.counter is not None
        try:
            count = await self.counter(image)
        except Exception:  # a remote model that cannot count, an engine closed: keep ≈
            return
        if chip in self.chips and count > 0:
            chip.counted[image.budget] = count
            chip.show_tokens()
            self.sig_changed.emit()

    def _update_visible(self) -> None:
        self.error_label.setVisible(bool(self.error_label.text()))
        self.setVisible(bool(self.chips or self.error_label.text()))
