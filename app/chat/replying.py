"""Writing one assistant reply for a `ChatSession`: start it, stream it, save it.

Owns the reply's life from its stored placeholder (`start_reply`: a ``streaming`` message
after the first ``row`` rows of the shown branch) through the rounds it streams (`generate`:
one `GenerationRequest` per round, MCP tool calls run between rounds, the last round offering
no tools) to its final save (`_finish`: retried, the state back to IDLE). Plain functions over
the session, which owns every attribute they touch (``_run``, the state, the signals). Does
not own which turn is replied to (the session's send/edit/regenerate/continue), the streamed
text's coalescing (`ReplyRun`), tool approval (`ToolRounds`) or stopping (the session).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from app.bridge import language_of
from app.chat.chinese_text import ReplyPostProcessor
from app.chat.final_save import save_final
from app.chat.reply_run import ReplyRun
from app.chat.states import State
from app.chat.tool_rounds import MAX_ROUNDS, cancelled, round_messages
from app.listmodels.messages import MessageItem
from app.store import Store
from app.store.tool_calls import save_tool_calls
from engine.types import FinishReason, GenerationRequest, Message

if TYPE_CHECKING:
    from app.chat.session import ChatSession


async def start_reply(s: ChatSession, row: int) -> None:
    """Start a new reply after the first ``row`` rows of the shown branch."""
    assert s.conversation_id is not None
    history = s._history(row)
    parent = s.messages.item(row - 1)
    old_count = s.messages.item(row).sibling_count if row < s.messages.rowCount() else 0
    stored = await s.db.call(
        Store.add_message,
        s.conversation_id,
        parent.id,
        "assistant",
        "",
        status="streaming",
        model=s._model_name(),
        params=s.params,
    )
    reply = MessageItem(
        stored.id,
        "assistant",
        "",
        parent_id=parent.id,
        sibling_index=old_count,
        sibling_count=old_count + 1,
        streaming=True,
        model=s._model_name(),
        params=s.params.to_dict(),
    )
    s.messages.replace_tail(row, [reply])
    await generate(s, reply, history, continue_last=False)


async def generate(
    s: ChatSession, reply: MessageItem, history: tuple[Message, ...], *, continue_last: bool
) -> None:
    history = await s.documents.prompt(history, reply, continue_last=continue_last)
    s._set_state(State.GENERATING)
    question = next((m.content for m in reversed(history) if m.role == "user"), "")
    run = _new_run(s, reply, question)
    try:
        belt = await s.tool_rounds.belt(s.conversation_id)
        for number in range(MAX_ROUNDS + 1):
            # The request's params are what the reply starts with; the engine then reads
            # `s.live`. The last round offers no tools: the model must answer in words.
            request = GenerationRequest(
                history, s.params, conversation_id=s.conversation_id,
                continue_last=continue_last, thinking=s.thinking,
                tools=belt.specs if belt is not None and number < MAX_ROUNDS else (),
            )  # fmt: skip
            before = reply.content
            await _stream_round(s, run, request)
            finished = run.finished
            if belt is None or finished is None or finished.reason != FinishReason.TOOL_CALLS:
                break
            run.flush()
            records = await s.tool_rounds.run_round(
                reply, belt, finished, reply.content[len(before) :]
            )
            s._touch(reply)
            # Stop during an approval or call (not ``run.cancel``: the bridge sets that
            # when a stream ends before its worker has unwound).
            if records is None or s.state == State.STOPPING:
                run.finished = cancelled(finished)
                break
            history, continue_last = (*history, *round_messages(records)), False
            s.db.submit(save_tool_calls, reply.id, reply.tool_calls)
            run.conclude()
            run.deleteLater()
            run = _new_run(s, reply, question)
    except Exception as exc:  # a bridge or tool failure must not wedge the UI
        run.failure = exc
    finally:
        await _finish(s, run)


def _new_run(s: ChatSession, reply: MessageItem, question: str) -> ReplyRun:
    run = ReplyRun(reply, s._touch, s._save_partial, s)
    chinese = s.chinese
    if chinese.script == "auto":  # the reply follows its question's script
        chinese = chinese.following(language_of(question), question)
    if chinese.active:
        run.text.processor = ReplyPostProcessor(chinese)
    run.sig_context_changed.connect(s.sig_context_changed)
    run.sig_context_restored.connect(s.sig_context_restored)
    run.sig_notice.connect(s.sig_notice)
    s._run = run
    return run


async def _stream_round(s: ChatSession, run: ReplyRun, request: GenerationRequest) -> None:
    try:
        safety = s.safety_config.for_chat(s.safety_choice)
        async for event in s.bridge.stream(request, run.cancel, s.live, safety):
            run.on_event(event)
    except Exception as exc:  # a bridge failure must not wedge the UI
        run.failure = exc


async def _finish(s: ChatSession, run: ReplyRun) -> None:
    status = run.conclude()
    reply = run.reply
    s._run = None
    run.deleteLater()
    if run.failure is not None:
        s.sig_error.emit(run.failure)

    def save() -> Awaitable[object]:
        return s.db.call(
            Store.finish_message, reply.id, status, content=reply.content,
            finish_reason=reply.finish_reason, error=reply.error, stats=reply.stats,
            param_changes=reply.param_changes, reasoning=reply.reasoning,
            reasoning_seconds=reply.reasoning_seconds,
        )  # fmt: skip

    if reply.tool_calls:  # before the final save, which the tests and the window wait for
        await s.db.call(save_tool_calls, reply.id, reply.tool_calls)
    try:  # retried; when it still fails the text stays on screen, marked "not saved"
        not_saved = await save_final(save, reply, s._touch)
        if not_saved is not None:
            s.sig_error.emit(not_saved)
    finally:
        s._set_state(State.IDLE)
        s.sig_generation_finished.emit(reply)
