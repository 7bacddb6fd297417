"""A disk that fills up during a reply (issue 12, row 12), for real: SQLite's ``max_page_count``
makes the database full, which fails writes with SQLITE_FULL exactly as a full disk does.
The real session, bridge, engine (tiny model) and SQLite file; no mocks."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest

from app.chat import final_save
from app.chat.final_save import ReplyNotSavedError
from app.chat.session import ChatSession, State
from app.store import MessageStatus, Store
from engine.types import SamplingParams
from tests.app.conftest import GatedBackend

LONG = SamplingParams(temperature=0.0, seed=7, max_new_tokens=600, repetition_penalty=1.0)


def _fill_the_disk(store: Store) -> None:
    """From now on the database cannot grow by a single page, and its free pages and most of
    the room left inside pages are taken (as other files fill a real disk)."""
    with store._db() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS other_files (data BLOB)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        for size in (4000, 500, 50, 1):
            try:
                while True:
                    conn.execute("INSERT INTO other_files VALUES (zeroblob(?))", (size,))
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc)


def _free_space(store: Store) -> None:
    with store._db() as conn:
        conn.execute("PRAGMA max_page_count = 1073741823")


async def _send_with_full_disk(session: ChatSession, gated: GatedBackend, text: str) -> None:
    gated.armed = True
    task = asyncio.ensure_future(session.send(text))
    while not gated.first_delta.is_set():  # waiting for the engine thread, not timing it
        await asyncio.sleep(0.005)
    await session.db.call(_fill_the_disk)
    gated.gate.set()
    await task


def _stored_reply(session: ChatSession) -> Any:
    return session.db.call_blocking(Store.branch, session.conversation_id)[-1]


def test_a_full_disk_keeps_the_whole_reply_on_screen_and_says_it_is_not_saved(
    session: ChatSession, gated: GatedBackend, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def no_space_comes_back(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(final_save, "wait_before_retry", no_space_comes_back)
    errors: list[BaseException] = []
    session.sig_error.connect(errors.append)
    session.set_params(LONG)
    run(_send_with_full_disk(session, gated, "Tell me a long story"))
    reply = session.messages.item(1)
    assert waits == list(final_save.RETRY_WAITS_S)  # every retry was tried
    assert [type(e) for e in errors] == [ReplyNotSavedError]
    assert "database or disk is full" in str(errors[0])
    assert reply.record.error is not None and reply.record.error.startswith(
        "Not saved: database or disk is full."
    )
    assert "copy it before closing" in reply.record.error
    stored = _stored_reply(session)
    assert stored.status is MessageStatus.STREAMING  # the next start marks it partial
    assert len(stored.content) < len(reply.record.content)  # the screen has more than the disk
    assert session.state == State.IDLE
    run(session.db.call(_free_space))


def test_space_coming_back_during_the_retries_saves_the_reply(
    session: ChatSession, gated: GatedBackend, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def space_comes_back(seconds: float) -> None:
        waits.append(seconds)
        await session.db.call(_free_space)

    monkeypatch.setattr(final_save, "wait_before_retry", space_comes_back)
    errors: list[BaseException] = []
    session.sig_error.connect(errors.append)
    session.set_params(LONG)
    run(_send_with_full_disk(session, gated, "Tell me a long story"))
    reply = session.messages.item(1)
    stored = _stored_reply(session)
    assert waits == [final_save.RETRY_WAITS_S[0]]  # the first attempt met a full disk
    assert errors == [] and reply.record.error is None
    assert (stored.content, stored.status) == (reply.record.content, MessageStatus.COMPLETE)
