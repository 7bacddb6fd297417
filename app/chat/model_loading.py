"""Opening a model while the chat stays usable: `ModelLoading`, a collaborator of `ChatSession`.

Owns `load` (LOADING while the engine thread builds the backend; progress reports pass
straight through as the session's ``sig_load_progress``), its own state (whether a load runs,
which load is the latest) and the turn the user sends meanwhile (`SendQueue`: held, sent as
soon as the model is loaded, kept with the error when loading fails), and leaving a queued turn
behind when another chat is opened. Reads and tells the session it serves (its bridge, model,
open chat and signals) through the session's own public members. Does not own progress wording
(`app.chat.load_progress` and the views) or sending itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from app.bridge import BackendFactory
from app.chat.send_queue import SendQueue
from app.store.records import ImageAttachment
from engine.types import ModelInfo

if TYPE_CHECKING:
    from app.chat.session import ChatSession


class ModelLoading:
    """Loads models for ``session`` and holds a turn sent meanwhile."""

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.queue = SendQueue(session)  # a turn sent while the model opens
        self._loading_now = False  # the engine thread is building a backend
        self._loads_started = 0

    @property
    def loading(self) -> bool:
        """A model is being opened (on the engine thread)."""
        return self._loading_now

    async def load(self, factory: BackendFactory) -> ModelInfo | None:
        """Build the backend on the engine thread; meanwhile conversations, search and export
        work (they use the DB thread) and a sent turn waits in `queue`."""
        s = self.session
        if s.busy:
            s.sig_notice.emit(
                QCoreApplication.translate(
                    "ChatSession", "Stop the current reply before switching models."
                )
            )
            return None
        # Another model chosen while one opens: the engine thread opens both in turn, and
        # only the latest one counts (the earlier one is closed as soon as it is built).
        self._loads_started += 1
        mine = self._loads_started
        self._loading_now = True
        s.set_loading(True)
        s.model_info = None
        self.queue.wait_again()
        try:
            info = await s.bridge.load(factory, s.sig_load_progress.emit)
            if mine != self._loads_started:
                return None
            s.model_info = info
            s.sig_model_loaded.emit(info)
        except Exception as exc:
            if mine != self._loads_started:
                return None
            self.queue.fail(str(exc) or type(exc).__name__)
            s.sig_error.emit(exc)
            s.sig_model_loaded.emit(None)
            return None
        finally:
            if mine == self._loads_started:
                self._loading_now = False
                s.set_loading(False)
        if not self._release_queued():
            # The chat already open (the last one, reopened at start-up) was counted before
            # any model could count it: its context meter read 0 until the next message.
            await s.update_context()
        return s.model_info

    def queue_while_loading(
        self,
        text: str,
        conversation_id: str | None,
        edit_of: str | None = None,
        images: Sequence[ImageAttachment] = (),
    ) -> bool:
        """Hold a turn sent while the model opens, pictures and all (True), or say it cannot
        wait (False). Whether the model can see is asked when it has opened."""
        if not self._loading_now:
            return False
        self.queue.hold(text, conversation_id, edit_of, images)
        return True

    def leave_queued(self) -> None:
        """Another chat opens: the queued turn stays in the old chat's draft, unsent."""
        queued = self.queue.cancel()
        if queued is not None and queued.edit_of is None:
            self.session.sig_notice.emit(
                QCoreApplication.translate(
                    "ChatSession", "Your waiting message was kept as a draft, not sent."
                )
            )

    def _release_queued(self) -> bool:
        """Send the turn that waited for the model, if it belongs to the open chat."""
        queued = self.queue.queued
        s = self.session
        if queued is None or queued.conversation_id != s.conversation_id:
            self.queue.cancel()
            return False
        self.queue.take()
        if queued.edit_of is not None:
            s.spawn(s.edit(queued.edit_of, queued.text))
        else:
            s.spawn(s.send(queued.text, queued.images))
        return True
