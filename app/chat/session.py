"""`ChatSession`: the GUI-thread state machine between the widgets, the engine and the store.

States: IDLE, LOADING (a model is being built: everything but replies works, and a turn sent
meanwhile waits in `queue`; see `app.chat.model_loading`), GENERATING, STOPPING (cancel sent,
waiting for ``Finished(CANCELLED)``). Owns the current conversation, the shown branch
(`MessageListModel`), the sidebar list, the running reply (a `ReplyRun`, which coalesces
streamed text to ~30 Hz; `app.chat.replying` starts, streams and saves it), and the one
channel sampling parameters take from the panel to the sampler: a `LiveParams` that
`set_params` writes and the engine reads before every token, idle or mid-reply. Every handler
that waits is an ``asyncSlot`` and restores the state in ``finally``. Talks to the engine only
through `EngineBridge` and to SQLite only through `DbWorker`; never blocks the GUI thread. Does
not own widgets.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal
from qasync import asyncSlot

from app.bridge import BackendFactory, DbWorker, EngineBridge
from app.chat.chat_documents import ChatDocuments
from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions
from app.chat.conversation_list import ConversationListing
from app.chat.images import ImageAttachment, image_ref
from app.chat.model_loading import ModelLoading
from app.chat.replying import ReplyWriter
from app.chat.safety_config import SafetyConfig
from app.chat.settings_state import ChatSettingsState
from app.chat.states import State
from app.chat.temporary import leave_temporary
from app.chat.tool_rounds import ToolRounds, expand_history
from app.listmodels.branch import load_branch
from app.listmodels.conversations import ConversationListModel, ConversationRow
from app.listmodels.messages import MessageItem, MessageListModel
from app.portability.portable import short_title
from app.store import Store
from app.store.images import save_images
from app.system import paths
from engine.types import LiveParams, Message, ModelInfo, SamplingParams


class ChatSession(ChatSettingsState, QObject):
    sig_state_changed = Signal(str)
    sig_model_loaded = Signal(object)  # ModelInfo
    sig_load_progress = Signal(object)  # LoadProgress
    sig_error = Signal(object)  # BaseException: the window shows it with show_error
    sig_notice = Signal(str)  # a short status-bar message
    sig_context_changed = Signal(int, int, int)  # used, total, cached tokens
    sig_context_restored = Signal(int)  # cached tokens read from a chat's saved cache (restart)
    sig_conversation_opened = Signal(str)  # id ("" for a fresh, unsaved conversation)
    sig_conversation_created = Signal(str)  # the first send made a new conversation
    # A conversation was opened: its own ChatSettings (the defaults for a new chat) to show.
    sig_settings_restored = Signal(object)
    sig_send_accepted = Signal()  # the composer may clear its text
    sig_generation_finished = Signal(object)  # the finished MessageItem (tests, bench)
    sig_temporary_changed = Signal(bool)  # a temporary (never saved) chat began / ended

    def __init__(self, bridge: EngineBridge, db: DbWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.db = db  # the open chat's store: ``store_db``, or a temporary chat's memory one
        self.store_db = db  # the saved conversations (sidebar, search, trash)
        self.temporary = False  # the open chat lives in memory only (`app.chat.temporary`)
        self.messages = MessageListModel(self)
        self.conversations = ConversationListModel(self)
        self.listing = ConversationListing(db, self.conversations)  # the sidebar
        self.conversation_id: str | None = None
        self.live = LiveParams(SamplingParams())
        self.system_prompt = ""
        self.thinking: bool | None = None  # the template's enable_thinking; None: its default
        self.chinese = ChineseOptions()  # the open chat's script/punctuation/spacing for replies
        self.safety_choice = "default"  # the open chat's safety review ("default": Preferences')
        self.safety_config = SafetyConfig()  # the Preferences' review (the window sets it)
        self.model_spec: str | None = None  # how the loaded model was asked for ("bundled", …)
        self.defaults = ChatSettings()  # what a new chat starts from (and changes while new)
        self.state = State.IDLE
        self.model_info: ModelInfo | None = None
        self.writer = ReplyWriter(self)  # the reply being written (`app.chat.replying`)
        self.loader = ModelLoading(self)  # opening models; a turn sent meanwhile waits
        self.queue = self.loader.queue
        self.documents = ChatDocuments(self)  # the draft's attachments, documents in prompts
        self.tool_rounds = ToolRounds()  # MCP tools: the application gives it the hub and `ask`
        self._tasks: set[asyncio.Task[Any]] = set()
        self.conversations.sig_rename_requested.connect(self.on_rename_requested)

    # -- state ------------------------------------------------------------------------------
    def spawn(self, awaitable: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run ``awaitable`` in the background, errors shown; the task is kept alive."""
        task = asyncio.ensure_future(self.reporting(awaitable))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def reporting(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable``; an exception becomes an error dialog instead of a lost slot."""
        try:
            return await awaitable
        except Exception as exc:
            self.sig_error.emit(exc)
            return None

    def set_state(self, state: State) -> None:
        if state != self.state:
            self.state = state
            self.sig_state_changed.emit(state.value)

    def set_loading(self, loading: bool) -> None:
        """LOADING while `loader` builds a backend, then IDLE."""
        self.set_state(State.LOADING if loading else State.IDLE)

    @property
    def loading(self) -> bool:
        """A model is being opened (on the engine thread)."""
        return self.loader.loading

    async def load_model(self, factory: BackendFactory) -> ModelInfo | None:
        """Open a model (`ModelLoading.load`); the chat stays usable meanwhile."""
        return await self.loader.load(factory)

    @property
    def busy(self) -> bool:
        return self.state in (State.GENERATING, State.STOPPING)

    def _can_see(self) -> bool:
        """Whether the loaded model reads pictures: a chat with pictures continued on a
        text-only model goes on with their words only (the chip greyed says why)."""
        return self.model_info is not None and not self.model_info.vision_refusal

    def _refuse_images(self) -> bool:
        """Say why pictures cannot go to the loaded model (True), or let them (False)."""
        info = self.model_info
        if info is None:  # a turn sent while a model opens waits instead (`queue`)
            self.sig_notice.emit(self.tr("Open a model that can see to send the pictures."))
            return True
        if info.vision_refusal:
            # The pictures stay in the composer, whose chips say the reason translated.
            self.sig_notice.emit(
                self.tr("This model cannot read pictures: {reason}.").format(
                    reason=info.vision_refusal
                )
            )
            return True
        return False

    def _refuse_while_busy(self) -> bool:
        if self.busy:
            self.sig_notice.emit(self.tr("Stop the current reply first."))
            return True
        if self.model_info is None:
            self.sig_notice.emit(self.tr("The model is still loading."))
            return True
        return False

    # -- start-up and models ----------------------------------------------------------------
    async def open_store(self, factory: Any = None, path: Any = None) -> None:
        """Open the store on the DB thread and fill the sidebar."""
        await self.db.open(factory or (lambda: _open_store(path)))
        await self.refresh_conversations()

    async def update_context(self) -> None:
        """Show how much of the context the shown branch takes (after opening a chat or
        switching to another alternative); replies report it themselves as they stream."""
        window = self._context_window()
        if not window or not self.messages.rowCount() or self.busy:
            return
        if (stored := stored_context_tokens(self.messages.items())) is not None:
            self.sig_context_changed.emit(stored, window, 0)
            return
        try:
            history = self.documents.whole(self.history(self.messages.rowCount()))
            used = await self.bridge.count_tokens(history)  # with its documents, whole
        except Exception:  # a remote endpoint that cannot count, a closed engine: keep the old
            return
        self.sig_context_changed.emit(used, window, 0)

    # -- conversations ----------------------------------------------------------------------
    @property
    def folder_filter(self) -> str:
        """The sidebar shows this folder only ('' = every chat)."""
        return self.listing.folder_filter

    @folder_filter.setter
    def folder_filter(self, folder: str) -> None:
        self.listing.folder_filter = folder

    async def refresh_conversations(self) -> None:
        await self.listing.refresh()

    async def search(self, query: str) -> None:
        await self.listing.search(query)

    async def delete_conversation(self, conversation_id: str) -> None:
        """Soft delete: the window offers Undo (`restore_conversation`). The open chat's reply
        stops first, and a new chat takes its place."""
        if conversation_id == self.conversation_id and self.busy:
            self.on_stop_requested()
        await self.listing.remove(conversation_id)
        if conversation_id == self.conversation_id:
            await self.open_conversation(None)

    async def restore_conversation(self, conversation_id: str) -> None:
        await self.listing.restore(conversation_id)

    @asyncSlot(str)
    async def on_search_requested(self, query: str) -> None:
        await self.reporting(self.search(query))

    @asyncSlot(str)
    async def on_open_requested(self, conversation_id: str) -> None:
        await self.reporting(self.open_conversation(conversation_id))

    async def open_conversation(self, conversation_id: str | None) -> None:
        if conversation_id != self.conversation_id:
            self.bridge.save_caches_soon()  # the chat left: its cache goes to disk
        await leave_temporary(self)
        self.loader.leave_queued()
        if not conversation_id:
            self.conversation_id = None
            self.messages.set_items([])
            self.sig_conversation_opened.emit("")
            self._restore(self.defaults)
            self.sig_context_changed.emit(0, self._context_window(), 0)
            return
        items = await self.db.call(load_branch, conversation_id)
        conv = await self.db.call(Store.get_conversation, conversation_id)
        self.conversation_id = conversation_id
        self.messages.set_items([self._live_copy(i) for i in items])
        self.sig_conversation_opened.emit(conversation_id)
        self._restore(ChatSettings.from_conversation(conv, self.defaults))
        await self.update_context()

    def _live_copy(self, item: MessageItem) -> MessageItem:
        # The reply being written keeps streaming into the same object when shown again.
        live = self.writer.reply
        return live if live is not None and live.id == item.id else item

    @asyncSlot()
    async def on_new_requested(self) -> None:
        await self.reporting(self.open_conversation(None))

    @asyncSlot(str, str)
    async def on_rename_requested(self, conversation_id: str, title: str) -> None:
        await self.reporting(self.store_db.call(Store.rename_conversation, conversation_id, title))

    # -- turns ------------------------------------------------------------------------------
    @asyncSlot(str)
    async def on_send_requested(self, text: str) -> None:
        await self.reporting(self.send(text))

    async def send(self, text: str, images: Sequence[ImageAttachment] = ()) -> None:
        """Send a user turn: ``text``, the draft's documents and ``images`` (pictures kept by
        `app.chat.images.attach_image`). A refused turn leaves the composer as it was."""
        waiting = self.documents.tray.items  # documents alone may be sent, without words
        if not (text.strip() or waiting or images) or self.loader.queue_while_loading(
            text, self.conversation_id, images=images
        ):
            return  # pictures wait with the text: the model that opens is asked then
        if images and self._refuse_images():
            return
        if self._refuse_while_busy():
            return
        conv_id = await self._ensure_conversation(text if text.strip() else waiting[0].name)
        parent = (
            self.messages.item(self.messages.rowCount() - 1).id
            if self.messages.rowCount()
            else None
        )
        user = await self.db.call(Store.add_message, conv_id, parent, "user", text)
        attached = await self.documents.save_with(user.id)
        if images:
            await self.db.call(save_images, user.id, tuple(images))
        self.sig_send_accepted.emit()
        item = MessageItem.of(user.id, "user", text, parent_id=parent, attachments=attached)
        item.images = tuple(images)
        self.messages.append([item])
        await self.writer.start(len(self.messages.items()))

    async def regenerate(self, message_id: str) -> None:
        """A new alternative reply beside ``message_id`` (the old one is kept)."""
        row = self.messages.row_of(message_id)
        if row < 0 or self._refuse_while_busy():
            return
        await self.writer.start(row)

    async def edit(self, message_id: str, text: str) -> None:
        """Resubmit an edited user turn as a new branch beside the original."""
        row = self.messages.row_of(message_id)
        if row < 0 or not text.strip():
            return
        if self.loader.queue_while_loading(text, self.conversation_id, edit_of=message_id):
            return
        if self._refuse_while_busy():
            return
        original = self.messages.item(row)
        assert self.conversation_id is not None
        user = await self.db.call(
            Store.add_message, self.conversation_id, original.parent_id, "user", text
        )
        if original.images:  # the edited question still asks about its pictures
            await self.db.call(save_images, user.id, original.images)
        item = MessageItem.of(
            user.id,
            "user",
            text,
            parent_id=original.parent_id,
            sibling_index=original.sibling_count,
            sibling_count=original.sibling_count + 1,
            images=original.images,
        )
        self.messages.replace_tail(row, [item])
        await self.writer.start(row + 1)

    async def continue_reply(self, message_id: str) -> None:
        row = self.messages.row_of(message_id)
        if row < 0 or self._refuse_while_busy():
            return
        reply = self.messages.item(row)
        await self.db.call(Store.resume_message, reply.id)
        history = self.history(row + 1)
        await self.writer.write(reply, history, continue_last=True)

    async def navigate(self, message_id: str, step: int) -> None:
        """Show the previous (-1) or next (+1) alternative of ``message_id``."""
        row = self.messages.row_of(message_id)
        if row < 0 or self.busy:
            return
        siblings = await self.db.call(Store.siblings, message_id)
        target = siblings.index + step
        if not 0 <= target < siblings.count:
            return
        await self.db.call(Store.set_active, siblings.ids[target])
        assert self.conversation_id is not None
        items = await self.db.call(load_branch, self.conversation_id)
        self.messages.replace_tail(row, [self._live_copy(i) for i in items[row:]])
        await self.update_context()

    @asyncSlot(str)
    async def on_regenerate_requested(self, message_id: str) -> None:
        await self.reporting(self.regenerate(message_id))

    @asyncSlot(str, str)
    async def on_edit_submitted(self, message_id: str, text: str) -> None:
        await self.reporting(self.edit(message_id, text))

    @asyncSlot(str)
    async def on_continue_requested(self, message_id: str) -> None:
        await self.reporting(self.continue_reply(message_id))

    @asyncSlot(str, int)
    async def on_navigate_requested(self, message_id: str, step: int) -> None:
        await self.reporting(self.navigate(message_id, step))

    async def _ensure_conversation(self, first_text: str) -> str:
        if self.conversation_id is not None:
            return self.conversation_id
        title = short_title(first_text)  # cut after a word, with an ellipsis
        settings = self.settings()
        conv = await self.db.call(
            Store.create_conversation,
            title,
            model=settings.model,
            system_prompt=settings.system_prompt,
            params=settings.params_json(),
        )
        self.conversation_id = conv.id
        if not self.temporary:  # a temporary chat is never listed
            self.conversations.upsert_top(ConversationRow(conv.id, conv.title, conv.updated_at))
        self.sig_conversation_created.emit(conv.id)
        return conv.id

    def history(self, rows: int) -> tuple[Message, ...]:
        """The engine's turns for the first ``rows`` rows, after the system prompt."""
        # Thinking travels apart; the template decides whether past thinking stays.
        turns = []
        for i in self.messages.items()[:rows]:
            if i.tool_calls:  # the calls and results the reply was written with
                turns += expand_history(i)
            else:
                refs = tuple(image_ref(a) for a in i.images) if self._can_see() else ()
                r = i.record
                turns.append(Message(r.role, r.content, r.reasoning, images=refs))
        if self.system_prompt.strip():
            turns.insert(0, Message("system", self.system_prompt))
        return tuple(turns)

    # -- streaming (the reply itself: `app.chat.replying`) -----------------------------------
    def on_stop_requested(self) -> None:
        if self.writer.run is None and self.queue.queued is not None:  # Stop: a wait, too
            self.queue.cancel()
        if self.writer.run is not None and self.state == State.GENERATING:
            self.writer.cancel()
            self.tool_rounds.cancel()  # a call waiting for approval, or running
            self.set_state(State.STOPPING)

    def touch(self, item: MessageItem) -> None:
        """Announce that ``item`` changed (re-rendered now if shown, else when next shown)."""
        row = self.messages.row_of(item.id)
        if row >= 0 and self.messages.item(row) is item:
            self.messages.touch(row)
        else:
            item.revision += 1  # not shown now; the next view of it renders afresh

    def model_name(self) -> str | None:
        """The loaded model's name (None before one is loaded)."""
        return self.model_info.name if self.model_info else None

    def _context_window(self) -> int:
        return self.model_info.context_window if self.model_info else 0

    async def close(self, patience_s: float = 5.0) -> bool:
        """Stop a running reply, let it be saved, then shut the engine down."""
        self.writer.cancel()
        deadline = time.monotonic() + patience_s
        while self.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.02)  # the reply's final save: `app.chat.replying`
        return await self.bridge.close()


def stored_context_tokens(items: list[MessageItem]) -> int | None:
    """What the branch's last reply took of the context when it was written (its prompt plus
    its own tokens), as the engine counted it; None where no finished reply ends the branch.
    A re-count of the history is only an estimate (1,918 shown before quitting read 1,774
    after a relaunch), so a reopened chat shows the stored figure until the next send."""
    last = items[-1] if items else None
    if last is None or last.record.role != "assistant" or last.streaming:
        return None
    stats = last.record.stats if isinstance(last.record.stats, dict) else {}
    prompt, completion = stats.get("prompt_tokens"), stats.get("completion_tokens")
    if type(prompt) is not int or type(completion) is not int or prompt <= 0:
        return None
    return prompt + completion


def _open_store(path: Any) -> Store:

    store = Store(path or paths.database_path())
    store.open()
    return store
