"""Where the user types: a multi-line editor, the Send/Stop button and the Think switch.

Owns key handling (Enter sends, Shift+Enter inserts a newline, input-method composition is
never interrupted) and the draft text. The text is cleared only when the session confirms the
message was accepted (`clear_after_send`), so a failed send never loses what was typed. The
Think switch (shown only for models whose template takes ``enable_thinking``) turns a reasoning
model's thinking on or off for the next replies. While a message waits for the model to open
(`set_queued`) its text stays here, read-only, until it is sent or the wait is cancelled
(Escape cancels it too). Images (the picture button, a drop or a paste of image files or of
pixels) go to the draft's image chips (`app.views.chat.image_chips`), other files to the
documents; a model that cannot see greys the picture button with its reason. A picture is
read in the background: Send pressed meanwhile waits for it ("Reading images…") and sends once
every picture is ready, or sends nothing when one fails (its line shows, the text stays);
Escape gives the wait up. A message waiting for the model keeps its pictures as they are.
Does not own sending: `image_attachments` is what the window hands to `ChatSession.send` with
the text.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QEvent, QIODevice, QMimeData, QObject, Qt, Signal
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.attachments import PASTE_THRESHOLD_CHARS
from app.chat.images import ImageAttachment
from app.views.chat.image_chips import IMAGE_SUFFIXES, ImageChips, is_image_file
from app.views.dialogs.file_dialogs import FolderMemory
from app.views.documents.attachment_bar import AttachmentBar
from app.views.documents.collections_button import CollectionsButton
from engine.types import ModelInfo


class ComposerEdit(QPlainTextEdit):
    sig_submit = Signal()
    sig_files_dropped = Signal(list)  # local file paths dropped or pasted
    sig_long_paste = Signal(str)  # a paste over PASTE_THRESHOLD_CHARS: attached, not typed
    sig_images_dropped = Signal(list)  # image files dropped or pasted
    sig_image_pasted = Signal(bytes)  # pixels pasted (a screenshot tool's copy), as PNG

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return (
            bool(local_files(source)) or source.hasImage() or super().canInsertFromMimeData(source)
        )

    def insertFromMimeData(self, source: QMimeData) -> None:
        # Files become attachments and a very long paste a chip, so the box is never flooded.
        if files := local_files(source):
            images = [f for f in files if is_image_file(f)]
            if images:
                self.sig_images_dropped.emit(images)
            if others := [f for f in files if not is_image_file(f)]:
                self.sig_files_dropped.emit(others)
        elif source.hasImage() and (png := png_bytes(source.imageData())):
            self.sig_image_pasted.emit(png)
        elif source.hasText() and len(source.text()) > PASTE_THRESHOLD_CHARS:
            self.sig_long_paste.emit(source.text())
        else:
            super().insertFromMimeData(source)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        plain = not (event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if enter and plain and not self._composing():
            self.sig_submit.emit()
            return
        super().keyPressEvent(event)

    def _composing(self) -> bool:
        # While an input method is composing (pinyin candidates), Enter belongs to the IME.
        return bool(self.textCursor().block().layout().preeditAreaText())


def local_files(source: QMimeData) -> list[str]:
    return [u.toLocalFile() for u in source.urls() if u.isLocalFile()] if source.hasUrls() else []


def png_bytes(image: object) -> bytes:
    """A pasted or dropped QImage encoded as PNG (b"" when it is not one or is empty)."""
    if not isinstance(image, QImage) or image.isNull():
        return b""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # PySide6 takes str too
    buffer.close()
    return bytes(data.data())


class Composer(QWidget):
    sig_send_requested = Signal(str)
    sig_files_chosen = Signal(list)  # paths from the paperclip, a drop or a paste of files
    sig_long_paste = Signal(str)
    sig_stop_requested = Signal()
    sig_draft_changed = Signal(str)
    sig_thinking_toggled = Signal(bool)
    sig_images_changed = Signal()  # the draft's images or their budgets changed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.folders = FolderMemory()  # the window's own replaces it: "Attach…" opens there
        self.edit = ComposerEdit(self)
        self.edit.setObjectName("composerEdit")
        self.edit.setPlaceholderText(
            self.tr("Message Hearth…  (Enter to send, Shift+Enter for a new line)")
        )
        self.edit.setTabChangesFocus(True)
        self.edit.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.edit.setFixedHeight(84)
        self.button = QPushButton(self.tr("Send"), self)
        self.button.setObjectName("sendButton")
        self.button.setDefault(True)
        self.button.setMinimumWidth(88)
        self.think = QToolButton(self)
        self.think.setObjectName("thinkButton")
        self.think.setText(self.tr("Think"))
        self.think.setCheckable(True)
        self.think.setChecked(True)
        self.think.setToolTip(self.tr("Let the model think before it answers"))
        self.think.setAccessibleName(self.tr("Thinking on or off"))
        self.think.setVisible(False)
        self.think.toggled.connect(self.sig_thinking_toggled)
        self.attach = QToolButton(self)  # documents: `app.views.documents`
        self.attach.setObjectName("attachButton")
        self.attach.setText(self.tr("Attach…"))
        self.attach.setToolTip(self.tr("Attach files (or drop them on the window)"))
        self.attach.setAccessibleName(self.tr("Attach files"))
        self.attach.clicked.connect(self.on_attach_clicked)
        self.picture = QToolButton(self)
        self.picture.setObjectName("attachImageButton")
        self.picture.setText(self.tr("Image…"))
        self.picture.setAccessibleName(self.tr("Attach images"))
        self.picture.clicked.connect(self.on_picture_clicked)
        self.images = ImageChips(self)
        self.images.sig_changed.connect(self._on_images_changed)
        self.images.sig_failed.connect(self._on_image_failed)
        self.collections = CollectionsButton(self)  # what the chat searches: `app.views.documents`
        self.attachments = AttachmentBar(self)
        self.attachments.sig_changed.connect(self._refresh)
        self.edit.sig_files_dropped.connect(self.sig_files_chosen)
        self.edit.sig_long_paste.connect(self.sig_long_paste)
        self.edit.sig_images_dropped.connect(self.add_images)
        self.edit.sig_image_pasted.connect(self.add_image_data)
        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        buttons.addStretch(1)
        tools = QHBoxLayout()
        tools.addWidget(self.attach)
        tools.addWidget(self.picture)
        tools.addWidget(self.collections)
        tools.addWidget(self.think)
        buttons.addLayout(tools)
        buttons.addWidget(self.button)
        row = QHBoxLayout()
        row.addWidget(self.edit, 1)
        row.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 12)
        layout.setSpacing(0)
        layout.addWidget(self.images)
        layout.addWidget(self.attachments)
        layout.addLayout(row)
        self._generating = False
        self._can_send = True
        self._queued = False
        self._queue_failed = False
        self._send_waiting = False  # Send pressed while a picture is still being read
        self.edit.sig_submit.connect(self._on_edit_submit)
        self.button.clicked.connect(self._on_button_clicked)
        self.edit.textChanged.connect(self._on_edit_text_changed)
        self.edit.installEventFilter(self)
        self.set_model(None)

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.blockSignals(True)
        self.edit.setPlainText(text)
        self.edit.blockSignals(False)
        self.edit.moveCursor(self.edit.textCursor().MoveOperation.End)
        self._refresh()

    def set_thinking_available(self, available: bool) -> None:
        """Show the Think switch only where the model's template can turn thinking off."""
        self.think.setVisible(available)

    def set_thinking(self, on: bool | None) -> None:
        """Show a chat's setting (None: the template's default, which thinks)."""
        self.think.blockSignals(True)
        self.think.setChecked(on is not False)
        self.think.blockSignals(False)

    def on_attach_clicked(self) -> None:
        files = self.folders.open_files(self, "attachments", self.tr("Attach files"))
        if files:
            self.sig_files_chosen.emit(files)

    def on_picture_clicked(self) -> None:
        patterns = " ".join(f"*{s}" for s in IMAGE_SUFFIXES)
        files = self.folders.open_files(
            self,
            "images",
            self.tr("Attach images"),
            self.tr("Images ({0});;All files (*)").format(patterns),
        )
        if files:
            self.add_images(files)

    def add_images(self, paths: list[str]) -> None:
        """Attach image files to the draft (the picture button, a drop, a paste of files)."""
        self.images.add(paths)

    def add_image_data(self, data: bytes) -> None:
        """Attach pasted pixels (PNG bytes) to the draft."""
        self.images.add([data], name=self.tr("Pasted image"))

    def image_attachments(self) -> tuple[ImageAttachment, ...]:
        """The draft's images with their chosen budgets, for `ChatSession.send`."""
        return self.images.attachments()

    def set_model(self, info: ModelInfo | None) -> None:
        """The loaded model: its image budgets, or why it takes no pictures (greyed)."""
        self.images.set_model(info)
        self._refresh_picture()

    def _refresh_picture(self) -> None:
        refusal = self.images.refusal()
        self.picture.setEnabled(not refusal and not self._queued)
        self.picture.setToolTip(
            self.tr("This model cannot read images: {0}").format(refusal)
            if refusal
            else self.tr("Attach images (or drop or paste them into the message)")
        )

    def clear_after_send(self) -> None:
        self.edit.clear()
        self.images.clear()

    def set_generating(self, generating: bool) -> None:
        self._generating = generating
        self._refresh()

    def set_can_send(self, can_send: bool) -> None:
        """False while no model is loaded; typing stays possible."""
        self._can_send = can_send
        self._refresh()

    def set_queued(self, queued: bool, failed: bool = False) -> None:
        """The text is waiting to be sent once the model is ready: keep it as it is
        (``failed``: the model did not open; it waits for Retry or another model)."""
        self._queued = queued
        self._queue_failed = failed
        self.edit.setReadOnly(queued)
        self.images.set_locked(queued)  # its pictures wait with it
        self._refresh_picture()
        self._refresh()

    def _refresh(self) -> None:
        if self._queued:
            self.button.setText(self.tr("Not sent") if self._queue_failed else self.tr("Waiting…"))
            self.button.setEnabled(False)
        elif self._generating:
            self.button.setText(self.tr("Stop"))
            self.button.setEnabled(True)
        elif self._send_waiting:
            self.button.setText(self.tr("Reading images…"))
            self.button.setEnabled(False)
        else:
            self.button.setText(self.tr("Send"))
            self.button.setEnabled(self._can_send and self._has_content())

    def _on_edit_submit(self) -> None:
        if self._generating or self._queued or self._send_waiting:
            return
        if self._can_send and self._has_content():
            if self.images.pending():  # sent once every picture is ready
                self._send_waiting = True
                self._refresh()
                return
            self.sig_send_requested.emit(self.text())

    def _has_content(self) -> bool:
        return bool(self.text().strip() or self.attachments.chips or self.images.chips)

    def _on_images_changed(self) -> None:
        if self._send_waiting and not self.images.pending():
            self._send_waiting = False
            self._on_edit_submit()  # every picture is ready (or removed): send now
        self._refresh()
        self.sig_images_changed.emit()

    def _on_image_failed(self, _message: str) -> None:
        # A picture the user meant to send could not be attached: send nothing, so the
        # message does not go without it; its line shows and the text stays.
        self._send_waiting = False
        self._refresh()

    def _on_button_clicked(self) -> None:
        if self._generating:
            self.sig_stop_requested.emit()
        else:
            self._on_edit_submit()

    def _on_edit_text_changed(self) -> None:
        self._refresh()
        self.sig_draft_changed.emit(self.text())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Escape stops a streaming reply from the keyboard, as in most chat apps.
        if watched is self.edit and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() == Qt.Key.Key_Escape and self._send_waiting:
                self._send_waiting = False  # the pictures go on being read; nothing is sent
                self._refresh()
                return True
            if event.key() == Qt.Key.Key_Escape and (self._generating or self._queued):
                self.sig_stop_requested.emit()
                return True
        return super().eventFilter(watched, event)
