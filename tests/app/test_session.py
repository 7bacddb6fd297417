"""ChatSession end to end on the real bridge, the real engine (tiny random model) and a real
SQLite file: send, live parameter change mid-stream, stop, regenerate, edit, continue, restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from app.chat.session import ChatSession, State
from app.store import Store
from engine.types import SamplingParams
from tests.app.conftest import GatedBackend, close_session, make_session

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=24, repetition_penalty=1.0)
HOT = GREEDY.replace(temperature=5.0, top_k=0, top_p=1.0, min_p=0.0, seed=1234)


async def _until(flag: Any) -> None:
    while not flag.is_set():  # waiting for the engine thread, not asserting on time
        await asyncio.sleep(0.005)


async def _during_first_delta(session: ChatSession, gated: GatedBackend, start: Any, act: Any):
    gated.armed = True
    task = asyncio.ensure_future(start)
    await _until(gated.first_delta)
    act()
    gated.gate.set()
    await task


def _stored_branch(session: ChatSession) -> list[Any]:
    return session.db.call_blocking(Store.branch, session.conversation_id)


def test_send_streams_into_the_view_and_the_store(session: ChatSession, run: Any) -> None:
    session.set_params(GREEDY)
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    run(session.send("Hello there"))
    rows = session.messages.items()
    assert [r.record.role for r in rows] == ["user", "assistant"]
    reply = rows[1]
    assert finished == [reply]
    assert not reply.streaming and reply.record.finish_reason in ("stop", "length")
    assert reply.record.stats and reply.record.stats["completion_tokens"] >= 1
    assert reply.record.params == GREEDY.to_dict()
    stored = _stored_branch(session)
    assert [m.content for m in stored] == ["Hello there", reply.record.content]
    assert stored[1].status == "complete" and stored[1].stats is not None
    assert session.state == State.IDLE
    assert session.conversations.rows()[0].title == "Hello there"


def test_moving_a_slider_mid_stream_changes_the_continuation(
    session: ChatSession, gated: GatedBackend, run: Any
) -> None:
    session.set_params(GREEDY)
    run(session.send("Tell me a story"))
    untouched = session.messages.item(1).record.content
    run(session.open_conversation(None))
    session.set_params(GREEDY)
    run(
        _during_first_delta(
            session, gated, session.send("Tell me a story"), lambda: session.set_params(HOT)
        )
    )
    reply = session.messages.item(1)
    assert reply.record.content != untouched
    assert len(reply.record.param_changes) == 1
    change = reply.record.param_changes[0]
    assert change["params"]["temperature"] == 5.0
    assert 1 <= change["token_index"] < GREEDY.max_new_tokens
    stored = _stored_branch(session)[1]
    assert stored.param_changes[0]["token_index"] == change["token_index"]
    assert stored.params["temperature"] == 0.0


def test_stop_cancels_and_keeps_the_partial_reply(
    session: ChatSession, gated: GatedBackend, run: Any
) -> None:
    session.set_params(GREEDY.replace(max_new_tokens=200))
    states: list[str] = []
    session.sig_state_changed.connect(states.append)
    run(
        _during_first_delta(session, gated, session.send("Count to ten"), session.on_stop_requested)
    )
    reply = session.messages.item(1)
    assert reply.record.finish_reason == "cancelled"
    assert states[-2:] == [State.STOPPING, State.IDLE]
    assert reply.record.stats["completion_tokens"] < 200
    assert _stored_branch(session)[1].status == "cancelled"
    assert _stored_branch(session)[1].content == reply.record.content


def test_regenerate_keeps_alternatives_and_navigation_switches(
    session: ChatSession, run: Any
) -> None:
    session.set_params(GREEDY)
    run(session.send("Hi"))
    first = session.messages.item(1)
    session.set_params(HOT)
    run(session.regenerate(first.id))
    second = session.messages.item(1)
    assert second.id != first.id
    assert (second.sibling_index, second.sibling_count) == (1, 2)
    run(session.navigate(second.id, -1))
    shown = session.messages.item(1)
    assert shown.id == first.id and shown.record.content == first.record.content
    assert (shown.sibling_index, shown.sibling_count) == (0, 2)
    run(session.navigate(shown.id, +1))
    assert session.messages.item(1).id == second.id
    assert _stored_branch(session)[1].id == second.id  # the choice is remembered


def test_edit_resubmits_as_a_branch(session: ChatSession, run: Any) -> None:
    session.set_params(GREEDY)
    run(session.send("first question"))
    original = session.messages.item(0)
    run(session.edit(original.id, "edited question"))
    rows = session.messages.items()
    assert [r.record.content for r in rows[:1]] == ["edited question"]
    assert (rows[0].sibling_index, rows[0].sibling_count) == (1, 2)
    assert rows[1].record.role == "assistant" and rows[1].record.finish_reason
    run(session.navigate(rows[0].id, -1))
    assert session.messages.item(0).record.content == "first question"
    assert session.messages.rowCount() == 2


def test_continue_appends_to_a_reply_cut_at_the_token_limit(session: ChatSession, run: Any) -> None:
    session.set_params(GREEDY.replace(max_new_tokens=4))
    run(session.send("Write a long poem"))
    reply = session.messages.item(1)
    if reply.record.finish_reason != "length":  # the random model hit EOS: nothing to continue
        return
    before = reply.record.content
    run(session.continue_reply(reply.id))
    after = session.messages.item(1)
    assert after.id == reply.id and after.record.content.startswith(before)
    assert len(after.record.content) > len(before)
    assert _stored_branch(session)[1].content == after.record.content


def test_multi_turn_reuses_the_prompt_cache(session: ChatSession, run: Any) -> None:
    session.set_params(GREEDY)
    contexts: list[tuple[int, int, int]] = []
    session.sig_context_changed.connect(lambda *a: contexts.append(a))
    run(session.send("one"))
    run(session.send("two"))
    assert session.messages.rowCount() == 4
    used, total, cached = contexts[-1]
    assert cached > 0 and used <= total


def test_a_restart_restores_conversations(gated: GatedBackend, run: Any, tmp_path: Path) -> None:
    db = tmp_path / "restart.sqlite3"
    first = make_session(run, gated, db)
    first.set_params(GREEDY)
    run(first.send("remember me 记住我"))
    conv_id, contents = first.conversation_id, [i.record.content for i in first.messages.items()]
    close_session(first)
    second = make_session(run, gated, db)
    try:
        assert [r.id for r in second.conversations.rows()] == [conv_id]
        run(second.open_conversation(conv_id))
        assert [i.record.content for i in second.messages.items()] == contents
    finally:
        close_session(second)


def test_sending_without_a_model_is_refused_and_nothing_is_stored(
    session: ChatSession, run: Any
) -> None:
    session.model_info = None
    notices: list[str] = []
    accepted: list[bool] = []
    session.sig_notice.connect(notices.append)
    session.sig_send_accepted.connect(lambda: accepted.append(True))
    run(session.send("are you there?"))
    assert notices and not accepted
    assert session.messages.rowCount() == 0
