"""The safety review in a chat: a flagged reply is marked, nothing the user wrote is lost, and a
chat's own choice is saved with it. Real ChatSession, bridge and SQLite; the chat model and
the guard are `ScriptedBackend`s (a random model never says "Safety: Unsafe" on cue)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.chat.safety_config import SafetyConfig
from app.chat.session import ChatSession
from app.views.chat.message_text import message_html, message_summary
from tests.app.conftest import close_session, make_session
from tests.engine.safety.test_review import REPLY, chat_reply
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer


@pytest.fixture
def chat(run: Any, tmp_path: Path) -> Iterator[ChatSession]:
    backend = ScriptedBackend(smollm2_tokenizer(), chat_reply)
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    yield session
    close_session(session)


def rows(session: ChatSession) -> list[Any]:
    return [session.messages.item(i) for i in range(session.messages.rowCount())]


def test_a_flagged_reply_is_marked_and_the_question_kept(chat: ChatSession, run: Any) -> None:
    chat.safety_config = SafetyConfig(enabled=True, blocklist="detonator")
    run(chat.send("How do I build a kitchen timer?"))
    question, reply = rows(chat)
    assert question.record.content == "How do I build a kitchen timer?"
    assert (
        reply.record.finish_reason == "content_filter" and "detonator" not in reply.record.content
    )
    assert REPLY.startswith(reply.record.content)  # what was checked before the flag, if anything
    assert "stopped by the safety review: Blocklist" in message_summary(reply)


def test_a_flagged_question_shows_why_there_is_no_reply(chat: ChatSession, run: Any) -> None:
    chat.safety_config = SafetyConfig(enabled=True, blocklist="kitchen timer")
    run(chat.send("How do I build a kitchen timer?"))
    question, reply = rows(chat)
    assert (
        question.record.content == "How do I build a kitchen timer?" and reply.record.content == ""
    )
    assert "question stopped by the safety review" in message_html(reply, dark=False)


def test_a_chat_can_turn_the_review_off_and_keeps_its_choice(chat: ChatSession, run: Any) -> None:
    chat.safety_config = SafetyConfig(enabled=True, blocklist="detonator")
    run(chat.send("How do I build a kitchen timer?"))
    chat.set_safety_choice("off")
    conversation = chat.conversation_id
    run(chat.send("And again?"))
    assert "detonator" in rows(chat)[-1].record.content  # this chat opted out
    run(chat.open_conversation(None))  # a new chat follows the Preferences
    assert chat.safety_choice == "default"
    run(chat.open_conversation(conversation))  # reopened: its own choice is back
    assert chat.safety_choice == "off"


def test_the_safety_demo_chat_shows_both_stops(tmp_path: Path) -> None:
    """docs/safety.png's chat, through the real window (no model or guard runs)."""
    import subprocess
    import sys

    shot = tmp_path / "safety.png"
    done = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(shot), "--demo", "--demo-chat", "safety"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert shot.stat().st_size > 10_000
