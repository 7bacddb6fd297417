"""`ChatDocuments`: the open chat's attachments, from the paperclip to the prompt and the store.

Owns the tray of documents waiting for the next send (`AttachmentTray`: added from files, drops
or a long paste; read off the GUI thread; a file that cannot be read leaves a one-line message
and everything else as it was), the exact fit count shown beside them ("fits: 3,214 of 8,192
tokens", counted with the model's own tokenizer and template through the bridge), saving them
with the user message that carries them, and turning the shown branch into the prompt
(`app.chat.document_context`: whole when it fits, else numbered passages whose sources are
saved with the reply). Also the collections the open chat searches on each question
(GPT4All's LocalDocs: chosen per chat, saved with it in ``conversation_collections``), and the
`CollectionLibrary` that indexes and searches them (created on first use, over
``index_path``). Composed into `ChatSession` (``session.documents``); does not own widgets or
the state machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.chat.attachments import Attachment, AttachmentError, from_paste, read_file
from app.chat.collections import CollectionLibrary
from app.chat.document_context import (
    TOP_K,
    Turn,
    attachment_document,
    continued,
    fit_count,
    prepare,
    reply_reserve,
    searchable,
    whole,
    whole_sources,
)
from app.chat.sources import Source, sources_from_json
from app.documents.retrieval import AttachedText, retrieval_error
from app.listmodels.messages import MessageItem
from app.store.attachments import save_attachments, save_sources
from app.store.collections import collections_for, set_collections
from engine.types import Message

if TYPE_CHECKING:
    from app.chat.session import ChatSession


def attachment_of(d: dict[str, Any]) -> Attachment:
    size, kind, sha = int(d.get("size") or 0), str(d.get("kind") or "text"), d.get("sha256")
    sections = tuple((int(o), str(loc)) for o, loc in d.get("sections") or ())
    return Attachment(
        str(d["name"]), str(d["text"]), size, kind, d.get("tokens"), str(sha or ""), sections
    )


class AttachmentTray(QObject):
    """Documents attached to the draft, in order; each counted with the model's tokenizer."""

    sig_changed = Signal()
    sig_error = Signal(str)  # one line: "report.pdf: encrypted PDF; …"
    sig_fit_changed = Signal(int, int, bool)  # tokens used, context window, fits

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.items: list[Attachment] = []
        self.pastes = 0
        self.estimate = False  # the counts are a remote endpoint's estimate, not exact
        self.busy = 0  # files being read

    def add(self, attachment: Attachment) -> None:
        self.items.append(attachment)
        self.sig_changed.emit()

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.items):
            del self.items[index]
            self.sig_changed.emit()

    def take(self) -> list[Attachment]:
        items, self.items = self.items, []
        self.sig_changed.emit()
        return items

    def replace(self, index: int, attachment: Attachment) -> None:
        if 0 <= index < len(self.items):
            self.items[index] = attachment
            self.sig_changed.emit()


class ChatDocuments(QObject):
    sig_collections_changed = Signal(list)  # the names the open chat searches

    def __init__(self, session: ChatSession) -> None:
        super().__init__(session)
        self.tray = AttachmentTray(self)
        self.tray.sig_changed.connect(self.on_tray_changed)
        session.sig_model_loaded.connect(self.on_model_loaded)
        session.sig_conversation_opened.connect(self.on_conversation_opened)
        session.sig_conversation_created.connect(self.on_conversation_created)
        self.last_fit: tuple[int, int, bool] | None = None
        self.collections: list[str] = []  # searched on each question of the open chat
        self.index_path: Path | None = None  # the collections' file; None: documents_path()
        self._library: CollectionLibrary | None = None

    @property
    def library(self) -> CollectionLibrary:
        """The collections (indexing, search, watching), created on first use."""
        if self._library is None:
            from app.documents import documents_path

            self._library = CollectionLibrary(self.index_path or documents_path(), self)
        return self._library

    def close(self) -> None:
        if self._library is not None:
            self._library.close()
            self._library = None

    # -- the chat's collections ---------------------------------------------------------------
    def set_collections(self, names: Sequence[str]) -> None:
        """The open chat searches ``names`` from its next question on (saved with the chat;
        a chat not saved yet keeps them until its first message creates it)."""
        self.collections = list(dict.fromkeys(names))
        self.sig_collections_changed.emit(list(self.collections))
        cid = self.session.conversation_id
        if cid is not None:
            self.session.spawn(self.session.db.call(set_collections, cid, self.collections))

    def on_conversation_opened(self, conversation_id: str) -> None:
        if not conversation_id:
            self.collections = []
            self.sig_collections_changed.emit([])
            return
        self.session.spawn(self._load_collections(conversation_id))

    async def _load_collections(self, conversation_id: str) -> None:
        names = await self.session.db.call(collections_for, conversation_id)
        if self.session.conversation_id == conversation_id:
            self.collections = names
            self.sig_collections_changed.emit(list(names))

    def on_conversation_created(self, conversation_id: str) -> None:
        if self.collections:
            self.session.spawn(
                self.session.db.call(set_collections, conversation_id, self.collections)
            )

    @property
    def session(self) -> ChatSession:
        # The Qt parent, not an attribute: no Python reference cycle with the session.
        return self.parent()  # type: ignore[return-value]

    # -- adding -------------------------------------------------------------------------------
    def add_files(self, paths: Sequence[str | Path]) -> None:
        self.tray.sig_error.emit("")  # a new attempt: the last failure's message goes
        for path in paths:
            self.session.spawn(self.add_file(Path(path)))

    async def add_file(self, path: Path) -> Attachment | None:
        """Read ``path`` off the GUI thread and attach it; a failure is reported, not raised."""
        self.tray.busy += 1
        try:
            loop = asyncio.get_running_loop()
            attachment = await loop.run_in_executor(None, read_file, path)
        except AttachmentError as exc:
            self.tray.sig_error.emit(str(exc))
            return None
        finally:
            self.tray.busy -= 1
        self.tray.add(attachment)
        return attachment

    def add_paste(self, text: str) -> Attachment:
        self.tray.pastes += 1
        attachment = from_paste(text, self.tray.pastes)
        self.tray.add(attachment)
        return attachment

    # -- counting -----------------------------------------------------------------------------
    def on_tray_changed(self) -> None:
        if self.tray.items:
            self.session.spawn(self.update_fit())
        else:
            self.last_fit = None
            self.tray.sig_fit_changed.emit(0, 0, True)

    async def update_fit(self) -> tuple[int, int, bool] | None:
        """Count each new attachment, then the whole chat with them; tell the tray. A backend
        that cannot count (a closed engine) leaves the line empty instead of an error."""
        try:
            return await self._update_fit()
        except Exception:
            self.tray.sig_fit_changed.emit(0, 0, True)
            return None

    def on_model_loaded(self, _info: object) -> None:
        """Another tokenizer: the counts shown so far are recounted."""
        self.tray.items = [a.counted(None) for a in self.tray.items]
        if self.tray.items:
            self.session.spawn(self.update_fit())

    async def _update_fit(self) -> tuple[int, int, bool] | None:
        s = self.session
        window = s.model_info.context_window if s.model_info else 0
        if not window or s.bridge.backend is None:
            return None
        # A remote endpoint only estimates (its tokenizer is not here): the line says so.
        self.tray.estimate = s.model_info is not None and s.model_info.backend == "remote"
        for i, a in enumerate(list(self.tray.items)):
            if a.tokens is None:
                n = await s.bridge.count_tokens((Message("user", a.text),))
                if i < len(self.tray.items) and self.tray.items[i] is a:
                    self.tray.items[i] = a.counted(n)
        items = s.messages.items()
        turns = [*self.turns(s.history(len(items)), items),
                 Turn(Message("user", ""), tuple(self.tray.items))]  # fmt: skip
        used = await fit_count(s.bridge.count_tokens, turns)
        fit = (used, window, used + reply_reserve(window) <= window)
        self.last_fit = fit
        self.tray.sig_fit_changed.emit(*fit)
        return fit

    # -- sending ------------------------------------------------------------------------------
    async def save_with(self, message_id: str) -> list[dict[str, Any]]:
        """Store the tray's documents with the user message just added; empty the tray."""
        if not self.tray.items:
            return []
        items = [a.to_dict() for a in self.tray.take()]
        await self.session.db.call(save_attachments, message_id, items)
        return items

    def whole(self, history: tuple[Message, ...]) -> tuple[Message, ...]:
        """The shown branch's ``history`` with every document in it whole."""
        return whole(self.turns(history, self.session.messages.items()))

    @staticmethod
    def turns(history: Sequence[Message], items: Sequence[MessageItem]) -> list[Turn]:
        """``history`` (the messages sent for ``items``: a system prompt first, a reply's tool
        calls expanded into several) with each user turn's documents: the n-th user message
        is the n-th user row."""
        attached = iter([tuple(attachment_of(d) for d in i.attachments)
                         for i in items if i.record.role == "user"])  # fmt: skip
        return [Turn(m, next(attached, ()) if m.role == "user" else ()) for m in history]

    async def prompt(
        self, history: tuple[Message, ...], reply: MessageItem, *, continue_last: bool
    ) -> tuple[Message, ...]:
        """``history`` with the branch's documents in it (whole or as passages); the passages
        chosen become ``reply.sources`` and are saved with it."""
        s = self.session
        row = s.messages.row_of(reply.id)
        turns = self.turns(history, s.messages.items()[: max(row, 0)])
        names = list(self.collections)
        if not any(t.attachments for t in turns) and not names:
            return history
        window = s.model_info.context_window if s.model_info else 0
        if not window:
            return whole(turns)
        if continue_last:  # the reply goes on from the passages it was given
            try:
                # Passages go with the question again; documents read whole are whole already.
                given = [src for src in self.sources_of(reply) if not src.whole]
                return await continued(s.bridge.count_tokens, turns, window, given)
            except Exception:
                return whole(turns)

        async def retrieve(question: str, attachments: Sequence[Attachment]) -> list[Source]:
            return await self.retrieve(question, names, attachments)

        try:
            prepared = await prepare(
                s.bridge.count_tokens, turns, window, retrieve, collections=bool(names)
            )
        except Exception:  # cannot count: send the documents whole; the engine reports overflow
            return whole(turns)
        # Documents sent whole are the reply's sources too ([1] notes.md), as passages are.
        sources = prepared.sources or (whole_sources(turns) if prepared.fits else ())
        if sources:
            reply.sources = [src.to_dict() for src in sources]
            await s.db.call(save_sources, reply.id, reply.sources)
        return prepared.messages

    async def retrieve(
        self, question: str, names: Sequence[str], attachments: Sequence[Attachment]
    ) -> list[Source]:
        """The best passages for ``question`` from the collections ``names`` and the
        ``attachments`` (one search code: `app.documents.retrieval`); a search that fails says
        so in the status bar and the question goes without passages."""
        texts = [AttachedText(a.sha256, attachment_document(a)) for a in searchable(attachments)]
        try:
            found = await self.library.search(question, list(names), texts, TOP_K * 2)
        except Exception as exc:
            self.session.sig_notice.emit(retrieval_error(exc))
            return []
        return [Source(0, p.file, p.locator, p.text, p.before, p.after, p.path, p.collection)
                for p in found]  # fmt: skip

    @staticmethod
    def sources_of(item: MessageItem) -> list[Source]:

        return sources_from_json(item.sources)
