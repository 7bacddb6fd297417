"""Opening a model while the chat stays usable: `ChatSession`'s loading state and its queue.

Owns `load_model` (LOADING while the engine thread builds the backend; progress reports pass
straight through as ``sig_load_progress``), the turn the user sends meanwhile (`SendQueue`:
held, sent as soon as the model is loaded, kept with the error when loading fails), and
leaving a queued turn behind when another chat is opened. A mixin of `ChatSession`, which owns
the attributes declared here. Does not own progress wording (`app.chat.load_progress` and the
views) or sending itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, SignalInstance

from app.bridge import BackendFactory, EngineBridge
from app.chat.send_queue import SendQueue
from engine.types import ModelInfo


class ModelLoading:
    # Owned by ChatSession (see its __init__); declared for the type checker.
    bridge: EngineBridge
    model_info: ModelInfo | None
    conversation_id: str | None
    queue: SendQueue
    sig_model_loaded: SignalInstance
    sig_load_progress: SignalInstance
    sig_error: SignalInstance
    sig_notice: SignalInstance
    busy: Any  # a property of ChatSession

    spawn: Callable[[Awaitable[Any]], asyncio.Task[Any]]
    _set_loading: Callable[[bool], None]
    send: Callable[[str], Awaitable[None]]
    edit: Callable[[str, str], Awaitable[None]]
    update_context: Callable[[], Awaitable[None]]

    _loading_now = False  # the engine thread is building a backend
    _loads_started = 0

    @property
    def loading(self) -> bool:
        """A model is being opened (on the engine thread)."""
        return self._loading_now

    async def load_model(self, factory: BackendFactory) -> ModelInfo | None:
        """Build the backend on the engine thread; meanwhile conversations, search and export
        work (they use the DB thread) and a sent turn waits in `queue`."""
        if self.busy:
            self.sig_notice.emit(
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
        self._set_loading(True)
        self.model_info = None
        self.queue.wait_again()
        try:
            info = await self.bridge.load(factory, self.sig_load_progress.emit)
            if mine != self._loads_started:
                return None
            self.model_info = info
            self.sig_model_loaded.emit(info)
        except Exception as exc:
            if mine != self._loads_started:
                return None
            self.queue.fail(str(exc) or type(exc).__name__)
            self.sig_error.emit(exc)
            self.sig_model_loaded.emit(None)
            return None
        finally:
            if mine == self._loads_started:
                self._loading_now = False
                self._set_loading(False)
        if not self._release_queued():
            # The chat already open (the last one, reopened at start-up) was counted before
            # any model could count it: its context meter read 0 until the next message.
            await self.update_context()
        return self.model_info

    def queue_while_loading(
        self, text: str, conversation_id: str | None, edit_of: str | None = None
    ) -> bool:
        """Hold a turn sent while the model opens (True), or say it cannot wait (False)."""
        if not self._loading_now:
            return False
        self.queue.hold(text, conversation_id, edit_of)
        return True

    def leave_queued(self) -> None:
        """Another chat opens: the queued turn stays in the old chat's draft, unsent."""
        queued = self.queue.cancel()
        if queued is not None and queued.edit_of is None:
            self.sig_notice.emit(
                QCoreApplication.translate(
                    "ChatSession", "Your waiting message was kept as a draft, not sent."
                )
            )

    def _release_queued(self) -> bool:
        """Send the turn that waited for the model, if it belongs to the open chat."""
        queued = self.queue.queued
        if queued is None or queued.conversation_id != self.conversation_id:
            self.queue.cancel()
            return False
        self.queue.take()
        if queued.edit_of is not None:
            self.spawn(self.edit(queued.edit_of, queued.text))
        else:
            self.spawn(self.send(queued.text))
        return True
