"""`SendQueue`: what the user sent (or re-submitted as an edit) before the model was ready.

Owns the one queued turn (its text, its pictures, the conversation it belongs to, the message
an edit replaces) and its phase: waiting for the model, or the load failed (with the error, so the
view can offer Retry). The text is never dropped here: cancelling hands it back to whoever
asked (the composer keeps it; an edit goes back to its dialog). Does not own sending (the
session sends what `take` returns once a model is loaded) or any widget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Signal

from app.store.records import ImageAttachment


@dataclass(frozen=True, slots=True)
class QueuedSend:
    """One turn waiting for a model. ``edit_of``: the user message it replaces (an edit)."""

    text: str
    conversation_id: str | None  # None: the new, unsaved chat
    edit_of: str | None = None
    error: str = ""  # set when the load failed: the turn waits for Retry or another model
    # Kept (copied into the data folder) and shown in the composer's chips meanwhile; sent if
    # the model that opens can see, else refused in words and left in the composer.
    images: tuple[ImageAttachment, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.error)


class SendQueue(QObject):
    sig_changed = Signal(object)  # QueuedSend | None
    # A queued edit was cancelled: (message id, text) go back to an edit dialog.
    sig_edit_returned = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._queued: QueuedSend | None = None

    @property
    def queued(self) -> QueuedSend | None:
        return self._queued

    def hold(
        self,
        text: str,
        conversation_id: str | None,
        edit_of: str | None = None,
        images: Sequence[ImageAttachment] = (),
    ) -> None:
        """Keep ``text`` and ``images`` until a model is loaded (a second turn replaces an
        earlier one)."""
        self._set(QueuedSend(text, conversation_id, edit_of, images=tuple(images)))

    def fail(self, error: str) -> None:
        """The load failed: the turn stays, marked with ``error``, for Retry."""
        if self._queued is not None:
            self._set(replace(self._queued, error=error))

    def wait_again(self) -> None:
        """A new load started (Retry, or another model chosen): waiting again, error cleared."""
        if self._queued is not None and self._queued.failed:
            self._set(replace(self._queued, error=""))

    def take(self) -> QueuedSend | None:
        """The turn to send now; the queue is empty afterwards."""
        queued = self._queued
        self._set(None)
        return queued

    def cancel(self) -> QueuedSend | None:
        """Forget the turn without sending it; an edit's text goes back to its dialog."""
        queued = self.take()
        if queued is not None and queued.edit_of is not None:
            self.sig_edit_returned.emit(queued.edit_of, queued.text)
        return queued

    def _set(self, queued: QueuedSend | None) -> None:
        if queued != self._queued:
            self._queued = queued
            self.sig_changed.emit(queued)
