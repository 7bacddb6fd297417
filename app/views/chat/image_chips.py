"""The draft's images above the composer: one chip each, and the line saying why one was not.

Owns, for the message being written: attaching images (a file, a drop or a paste, through
`app.chat.images.attach_image`, which checks and stores them) on a worker thread, so a
100-megapixel photo never pauses the window: its chip (`app.views.chat.image_chip`) shows
"reading…" at once and its thumbnail and token cost when the picture is ready; removing it
meanwhile gives the work up (nothing is kept). One line of error (a corrupt file, a model that
cannot see) never touches the typed text. The token figure is the model's typical image
(`ModelInfo.image_tokens`) or the chosen budget until the engine has counted this picture at
its size (``counter``, given by the window: `EngineBridge.count_tokens`). While the draft waits
for a model to open (`set_locked`) its pictures stay as they are. Does not own sending (the
composer hands `attachments` to `ChatSession.send`, and waits for `pending` ones) nor reading
the pixels (`app.views.chat.image_pixels`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Signal
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.chat.images import AttachCancelled, ImageAttachment, ImageError, attach_image
from app.views.chat.image_chip import CHIP_THUMB, ImageChip
from app.views.chat.image_pixels import thumbnail
from engine.types import ModelInfo

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


@dataclass
class Reading:
    """One picture being read on a worker thread: ``cancel`` gives it up, ``done`` is set
    when the thread has let go of it (whatever the outcome)."""

    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Future[None] | None = None


def read_picture(
    source: Path | bytes, name: str, folder: Path | None, reading: Reading
) -> tuple[ImageAttachment, QImage]:
    """Worker thread: check and keep ``source``, and read its chip's thumbnail (a QImage,
    which may be made off the GUI thread; the chip turns it into a pixmap)."""
    try:
        image = attach_image(
            source, name=name, images_folder=folder, cancelled=reading.cancel.is_set
        )
        return image, thumbnail(image.path, CHIP_THUMB)
    finally:
        reading.done.set()


class ImageChips(QWidget):
    """The row of the draft's image chips and its one error line; hidden while empty."""

    sig_changed = Signal()  # an image was added, became ready or was removed, or its budget
    sig_failed = Signal(str)  # a picture could not be attached (the line shown)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageChips")
        self.images_folder: Path | None = None  # where attached copies go (None: the data folder)
        self.counter: ImageCounter | None = None
        self.chips: list[ImageChip] = []
        self.info: ModelInfo | None = None
        self.locked = False
        self.readings: dict[ImageChip, Reading] = {}  # the chips still being read
        self._errors: list[str] = []
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
        self._tasks: set[asyncio.Future[None]] = set()
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
        sent while one opens waits for it with its pictures, and is refused then)."""
        reason = self.info.vision_refusal if self.info is not None else ""
        return QCoreApplication.translate("ImageChips", reason) if reason else ""

    # -- the draft's images -----------------------------------------------------------------
    def add(self, sources: Sequence[Path | str | bytes], name: str = "") -> list[ImageChip]:
        """Attach each of ``sources`` (files, or an image's encoded bytes named ``name``) in
        the background: a chip each at once, "reading…"; one that cannot be attached says why
        in the error line and loses its chip, and the rest go on."""
        if self.refusal():
            self.show_error(
                self.tr("Images cannot be sent to this model: {0}").format(self.refusal())
            )
            return []
        if self.locked:
            self.show_error(
                self.tr("The message is waiting for the model: add pictures after it is sent.")
            )
            return []
        self._errors = []
        self.show_error("")
        added = []
        for source in sources:
            item = source if isinstance(source, bytes) else Path(source)
            label = name or (item.name if isinstance(item, Path) else self.tr("Pasted image"))
            chip = self._add_chip(label)
            self._read(chip, item, label)
            added.append(chip)
        if added:
            self.sig_changed.emit()
        return added

    def _add_chip(self, name: str) -> ImageChip:
        chip = ImageChip(name, self)
        chip.set_model(self.info)
        chip.sig_remove_requested.connect(lambda c=chip: self.remove(self.chips.index(c)))
        chip.sig_budget_changed.connect(lambda c=chip: self._on_budget_changed(c))
        self._row.insertWidget(len(self.chips), chip)
        self.chips.append(chip)
        self._update_visible()
        return chip

    def _read(self, chip: ImageChip, source: Path | bytes, name: str) -> None:
        reading = Reading()
        self.readings[chip] = reading
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:  # no event loop (a widget alone): read it here
            self._settle(chip, source, name, reading)
            return
        task = loop.create_task(self._reading(chip, source, name, reading))
        reading.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reading(
        self, chip: ImageChip, source: Path | bytes, name: str, reading: Reading
    ) -> None:
        try:
            read = await asyncio.to_thread(read_picture, source, name, self.images_folder, reading)
        except AttachCancelled:
            return
        except ImageError as exc:
            self._failed(chip, str(exc))
            return
        except Exception as exc:  # a fault below Pillow (memory): one line, never a traceback
            self._failed(chip, self.tr("{0} cannot be attached: {1}").format(name, exc))
            return
        self._ready(chip, *read)

    def _settle(self, chip: ImageChip, source: Path | bytes, name: str, reading: Reading) -> None:
        try:
            self._ready(chip, *read_picture(source, name, self.images_folder, reading))
        except ImageError as exc:
            self._failed(chip, str(exc))

    def _ready(self, chip: ImageChip, image: ImageAttachment, picture: QImage) -> None:
        if self.readings.pop(chip, None) is None:
            return  # removed meanwhile
        chip.set_ready(image, picture)
        self._count(chip)
        self.sig_changed.emit()

    def _failed(self, chip: ImageChip, message: str) -> None:
        if self.readings.pop(chip, None) is None:
            return
        self._drop(chip)
        self._errors.append(message)
        self.show_error("\n".join(self._errors))
        self.sig_failed.emit(message)
        self.sig_changed.emit()

    def pending(self) -> bool:
        """Some picture is still being read (a Send waits for it)."""
        return bool(self.readings)

    async def wait_ready(self) -> None:
        """Until no picture is being read (each ready, failed or removed)."""
        while tasks := [r.task for r in self.readings.values() if r.task is not None]:
            await asyncio.gather(*tasks, return_exceptions=True)

    def remove(self, index: int) -> None:
        """Take a chip away; one still being read is given up (its thread keeps nothing)."""
        self._drop(self.chips[index])
        self.show_error("")
        self.sig_changed.emit()

    def _drop(self, chip: ImageChip) -> None:
        reading = self.readings.pop(chip, None)
        if reading is not None:
            reading.cancel.set()
            if reading.task is not None:
                reading.task.cancel()
        self.chips.remove(chip)
        self._row.removeWidget(chip)
        chip.deleteLater()

    def clear(self) -> None:
        """Forget the draft's images (the message was sent with them)."""
        for chip in list(self.chips):
            self._drop(chip)
        self.show_error("")
        self.sig_changed.emit()

    def set_locked(self, locked: bool) -> None:
        """The draft waits for a model to open: its pictures go as they are (no removing,
        no other budget, none added)."""
        self.locked = locked
        for chip in self.chips:
            chip.set_locked(locked)

    def attachments(self) -> tuple[ImageAttachment, ...]:
        """The images to send, each with the budget chosen on its chip (ready ones only)."""
        return tuple(chip.image for chip in self.chips if chip.image is not None)

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
        image = chip.image
        if image is None or self.counter is None or self.refusal() or image.budget in chip.counted:
            return
        try:
            task = asyncio.ensure_future(self._counted(chip, image))
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
