"""`ReplyWriter`: writing one assistant reply for a chat — start it, stream it, save it.

Owns the reply's life from its stored placeholder (`start`: a ``streaming`` message after the
first ``row`` rows of the shown branch) through the rounds it streams (`write`: one
`GenerationRequest` per round, MCP tool calls run between rounds, the last round offering no
tools) to its final save (retried, the state back to IDLE), and the running `ReplyRun`
(``run``). It talks to its chat only through `ReplyHost`, the public members listed there.
Does not own which turn is replied to (the session's send/edit/regenerate/continue), the
streamed text's coalescing (`ReplyRun`), tool approval (`ToolRounds`) or stopping (the session).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import SignalInstance

from app.bridge import DbWorker, EngineBridge, language_of
from app.chat.chinese_text import ChineseOptions, ReplyPostProcessor
from app.chat.final_save import save_final
from app.chat.reply_run import ReplyRun
from app.chat.safety_config import SafetyConfig
from app.chat.states import State
from app.chat.tool_rounds import MAX_ROUNDS, ToolRounds, cancelled, round_messages
from app.listmodels.messages import MessageItem, MessageListModel
from app.store import Store
from app.store.tool_calls import save_tool_calls
from engine.types import FinishReason, GenerationRequest, LiveParams, Message, SamplingParams

if TYPE_CHECKING:
    from app.chat.chat_documents import ChatDocuments


class ReplyHost(Protocol):
    """What a `ReplyWriter` reads from and tells its chat (`app.chat.session.ChatSession`)."""

    conversation_id: str | None
    messages: MessageListModel
    db: DbWorker
    bridge: EngineBridge
    documents: ChatDocuments
    tool_rounds: ToolRounds
    live: LiveParams  # the engine reads the sliders' latest values from it, every token
    thinking: bool | None
    chinese: ChineseOptions
    safety_config: SafetyConfig
    safety_choice: str
    state: State
    sig_context_changed: SignalInstance
    sig_context_restored: SignalInstance
    sig_notice: SignalInstance
    sig_error: SignalInstance
    sig_generation_finished: SignalInstance

    @property
    def params(self) -> SamplingParams: ...

    def history(self, rows: int) -> tuple[Message, ...]: ...

    def model_name(self) -> str | None: ...

    def set_state(self, state: State) -> None: ...

    def touch(self, item: MessageItem) -> None: ...


class ReplyWriter:
    """Writes replies for one chat, one at a time; ``run`` is the reply streaming now."""

    def __init__(self, host: ReplyHost) -> None:
        self.host = host
        self.run: ReplyRun | None = None

    @property
    def reply(self) -> MessageItem | None:
        """The message being written, if any."""
        return self.run.reply if self.run is not None else None

    def cancel(self) -> None:
        """Ask the running reply to stop (cooperative: the engine checks every token)."""
        if self.run is not None:
            self.run.cancel.set()

    async def start(self, row: int) -> None:
        """Start a new reply after the first ``row`` rows of the shown branch."""
        h = self.host
        assert h.conversation_id is not None
        history = h.history(row)
        parent = h.messages.item(row - 1)
        old_count = h.messages.item(row).sibling_count if row < h.messages.rowCount() else 0
        stored = await h.db.call(
            Store.add_message, h.conversation_id, parent.id, "assistant", "",
            status="streaming", model=h.model_name(), params=h.params,
        )  # fmt: skip
        reply = MessageItem.of(
            stored.id, "assistant", "", parent_id=parent.id, sibling_index=old_count,
            sibling_count=old_count + 1, streaming=True, model=h.model_name(),
            params=h.params.to_dict(),
        )  # fmt: skip
        h.messages.replace_tail(row, [reply])
        await self.write(reply, history, continue_last=False)

    async def write(
        self, reply: MessageItem, history: tuple[Message, ...], *, continue_last: bool
    ) -> None:
        """Stream ``reply`` (new, or continued with ``continue_last``) and save it."""
        h = self.host
        history = await h.documents.prompt(history, reply, continue_last=continue_last)
        h.set_state(State.GENERATING)
        question = next((m.content for m in reversed(history) if m.role == "user"), "")
        run = self._new_run(reply, question)
        try:
            belt = await h.tool_rounds.belt(h.conversation_id)
            for number in range(MAX_ROUNDS + 1):
                # The request's params are what the reply starts with; the engine then reads
                # `h.live`. The last round offers no tools: the model must answer in words.
                request = GenerationRequest(
                    history, h.params, conversation_id=h.conversation_id,
                    continue_last=continue_last, thinking=h.thinking,
                    tools=belt.specs if belt is not None and number < MAX_ROUNDS else (),
                )  # fmt: skip
                before = reply.record.content
                await self._stream_round(run, request)
                finished = run.finished
                if belt is None or finished is None or finished.reason != FinishReason.TOOL_CALLS:
                    break
                run.flush()
                records = await h.tool_rounds.run_round(
                    reply, belt, finished, reply.record.content[len(before) :]
                )
                h.touch(reply)
                # Stop during an approval or call (not ``run.cancel``: the bridge sets that
                # when a stream ends before its worker has unwound).
                if records is None or h.state == State.STOPPING:
                    run.finished = cancelled(finished)
                    break
                history, continue_last = (*history, *round_messages(records)), False
                h.db.submit(save_tool_calls, reply.id, reply.tool_calls)
                run.conclude()
                run.deleteLater()
                run = self._new_run(reply, question)
        except Exception as exc:  # a bridge or tool failure must not wedge the UI
            run.failure = exc
        finally:
            await self._finish(run)

    def _save_partial(self, reply: MessageItem) -> None:
        record = reply.record
        self.host.db.submit(
            Store.update_message_content, reply.id, record.content, record.reasoning
        )

    def _new_run(self, reply: MessageItem, question: str) -> ReplyRun:
        h = self.host
        run = ReplyRun(reply, h.touch, self._save_partial)
        chinese = h.chinese
        if chinese.script == "auto":  # the reply follows its question's script
            chinese = chinese.following(language_of(question), question)
        if chinese.active:
            run.text.processor = ReplyPostProcessor(chinese)
        run.sig_context_changed.connect(h.sig_context_changed)
        run.sig_context_restored.connect(h.sig_context_restored)
        run.sig_notice.connect(h.sig_notice)
        self.run = run
        return run

    async def _stream_round(self, run: ReplyRun, request: GenerationRequest) -> None:
        h = self.host
        try:
            safety = h.safety_config.for_chat(h.safety_choice)
            async for event in h.bridge.stream(request, run.cancel, h.live, safety):
                run.on_event(event)
        except Exception as exc:  # a bridge failure must not wedge the UI
            run.failure = exc

    async def _finish(self, run: ReplyRun) -> None:
        h = self.host
        status = run.conclude()
        reply = run.reply
        self.run = None
        run.deleteLater()
        if run.failure is not None:
            h.sig_error.emit(run.failure)

        def save() -> Awaitable[object]:
            r = reply.record
            return h.db.call(
                Store.finish_message, reply.id, status, content=r.content,
                finish_reason=r.finish_reason, error=r.error, stats=r.stats,
                param_changes=r.param_changes, reasoning=r.reasoning,
                reasoning_seconds=r.reasoning_seconds,
            )  # fmt: skip

        if reply.tool_calls:  # before the final save, which the tests and the window wait for
            await h.db.call(save_tool_calls, reply.id, reply.tool_calls)
        try:  # retried; when it still fails the text stays on screen, marked "not saved"
            not_saved = await save_final(save, reply, h.touch)
            if not_saved is not None:
                h.sig_error.emit(not_saved)
        finally:
            h.set_state(State.IDLE)
            h.sig_generation_finished.emit(reply)
