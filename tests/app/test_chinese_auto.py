""" "Auto: follow the question": a question in Traditional gets a reply in Traditional, through
the real session, bridge and language detection (the model is a `ScriptedBackend` that always
answers in Simplified, as small models tend to)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.chat.chinese_text import ChineseOptions
from app.chat.session import ChatSession
from tests.app.conftest import close_session, make_session
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

SIMPLIFIED_REPLY = "软件设置里可以调整内存，他说“好”。"


@pytest.fixture
def chat(run: Any, tmp_path: Path) -> Iterator[ChatSession]:
    backend = ScriptedBackend(smollm2_tokenizer(), lambda _messages: SIMPLIFIED_REPLY)
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    session.set_chinese(ChineseOptions(script="auto"))
    yield session
    close_session(session)


def last_reply(session: ChatSession) -> str:
    return session.messages.item(session.messages.rowCount() - 1).record.content


def test_a_traditional_question_gets_a_traditional_reply(chat: ChatSession, run: Any) -> None:
    run(chat.send("請問軟體設定在哪裡？"))
    assert last_reply(chat) == "軟體設定裡可以調整記憶體，他說「好」。"


def test_a_simplified_or_english_question_keeps_the_reply_as_written(
    chat: ChatSession, run: Any
) -> None:
    run(chat.send("请问软件设置在哪里？"))
    assert last_reply(chat) == SIMPLIFIED_REPLY
    run(chat.send("Where are the settings?"))
    assert last_reply(chat) == SIMPLIFIED_REPLY


def test_written_cantonese_follows_hong_kongs_standard() -> None:
    auto = ChineseOptions(script="auto", punctuation=True)
    assert auto.following("zh-Hant", "呢個設定喺邊度？").script == "traditional_hk"
    assert auto.following("zh-Hant", "這個設定在哪裡？").script == "traditional_tw"
    assert auto.following("zh-Hans").script == "simplified"
    assert auto.following("ja").script == "off" and auto.following("ja").punctuation
    assert ChineseOptions.from_dict(auto.to_dict()) == auto
