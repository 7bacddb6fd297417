"""Reasoning replies end to end: the real engine (tiny random Llama) behind chat templates that
open ``<think>`` (R1-like) or take ``enable_thinking`` (Qwen3-like), the real bridge, session and
SQLite file. The thinking is stored apart from the answer, survives a restart (schema version 2,
migrated from a version-1 file), and stays out of the next prompt where the template says so."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from app.chat.session import ChatSession
from app.listmodels.messages import MessageItem, MessageListModel
from app.store import SCHEMA_VERSION, Store, migrations
from app.store.prompts import list_prompts
from app.views.chat.chat_view import ChatView
from engine.text import render_prompt
from engine.types import (
    Backend,
    SamplingParams,
)
from tests.app.conftest import close_session, make_session
from tests.engine.loop.test_text import QWEN3_LIKE_TEMPLATE, R1_LIKE_TEMPLATE
from tests.engine.support.wrapping import WrappingBackend

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=16, repetition_penalty=1.0)


def _engine_with_template(tiny_model_dir: Path, folder: Path, template: str) -> Any:
    from engine.engine import Engine

    shutil.copytree(tiny_model_dir, folder)
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return Engine(str(folder), dtype="float32", device="cpu", backend="torch")


@pytest.fixture(scope="module")
def r1_engine(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    engine = _engine_with_template(
        tiny_model_dir, tmp_path_factory.mktemp("r1") / "model", R1_LIKE_TEMPLATE
    )
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def qwen3_engine(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    engine = _engine_with_template(
        tiny_model_dir, tmp_path_factory.mktemp("qwen3") / "model", QWEN3_LIKE_TEMPLATE
    )
    yield engine
    engine.close()


@pytest.fixture
def r1_session(run: Any, r1_engine: Backend, tmp_path: Path) -> Iterator[ChatSession]:
    chat = make_session(run, WrappingBackend(r1_engine), tmp_path / "hearth.sqlite3")
    chat.set_params(GREEDY)
    yield chat
    close_session(chat)


def test_a_prompt_that_opens_thinking_streams_into_the_thinking(
    r1_session: ChatSession, r1_engine: Any, run: Any, tmp_path: Path
) -> None:
    assert not r1_engine.info.thinking_toggle
    finished: list[Any] = []
    r1_session.sig_generation_finished.connect(finished.append)
    run(r1_session.send("What is 2+2?"))
    reply = r1_session.messages.item(1)
    # Random weights never write </think>: the whole reply is thinking, cut at the limit.
    assert reply.record.reasoning and reply.record.content == ""
    assert reply.record.reasoning_seconds is not None and reply.record.reasoning_seconds >= 0
    stored = r1_session.db.call_blocking(Store.branch, r1_session.conversation_id)[1]
    assert (stored.reasoning, stored.content) == (reply.record.reasoning, "")
    assert stored.reasoning_seconds == pytest.approx(reply.record.reasoning_seconds)


def test_past_thinking_travels_apart_and_the_template_drops_it(
    run: Any, qwen3_engine: Any, tmp_path: Path
) -> None:
    assert qwen3_engine.info.thinking_toggle
    backend = WrappingBackend(qwen3_engine)
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    try:
        session.set_params(GREEDY)
        run(session.send("First"))
        first = session.messages.item(1)
        # Give the first reply a thinking part, as a reasoning model would have written it.
        first.update(reasoning="secret plan", content=first.record.content or "answer")
        session.thinking = False
        run(session.send("Second"))
        request = backend.requests[-1]
        assert request.thinking is False
        past = request.messages[1]
        assert (past.reasoning, past.content) == ("secret plan", first.record.content)
        tokenizer = qwen3_engine._loaded.tokenizer  # the engine's own, to render as it did
        prompt = render_prompt(tokenizer, request.messages, thinking=False)
        assert "secret plan" not in prompt and prompt.endswith("<think>\n\n</think>\n\n")
    finally:
        close_session(session)


def test_version_1_database_migrates_and_keeps_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    migrations._apply(conn, 1, migrations.MIGRATIONS[0])
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('c', 'Old', 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages (id, conversation_id, role, content, created_at, updated_at)"
        " VALUES ('m', 'c', 'user', 'hello', 1, 1)"
    )
    conn.close()
    with Store(path) as store:
        store.open()
        [message] = store.branch("c")
        assert (message.content, message.reasoning, message.reasoning_seconds) == (
            "hello",
            "",
            None,
        )
        assert list_prompts(store) == []
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION >= 2


def test_store_keeps_thinking_while_streaming_and_when_finished(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite3") as store:
        conv = store.create_conversation("t")
        user = store.add_message(conv.id, None, "user", "Q")
        reply = store.add_message(conv.id, user.id, "assistant", "", status="streaming")
        store.update_message_content(reply.id, "", "thinking so fa")
        assert store.get_message(reply.id).reasoning == "thinking so fa"
        store.finish_message(
            reply.id, "complete", content="A", reasoning="thinking so far", reasoning_seconds=2.5
        )
        done = store.get_message(reply.id)
        assert (done.content, done.reasoning, done.reasoning_seconds) == (
            "A",
            "thinking so far",
            2.5,
        )
        assert store.search("thinking") == []  # thinking is not searched; answers are


# --- the Thinking section in the chat view ---------------------------------------------------


@pytest.fixture
def chat(qtbot: Any) -> ChatView:
    view = ChatView(MessageListModel())
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view)
    return view


def _click_thinking_header(chat: ChatView, qtbot: Any, item: MessageItem) -> None:
    delegate = chat.message_delegate
    layout = delegate.row_layout(chat.visualRect(chat.model().index(0, 0)), item)
    doc = delegate.document(item)
    first = doc.documentLayout().blockBoundingRect(doc.begin())
    pos = layout.body.topLeft() + QPoint(6, int(first.height() / 2))
    qtbot.mouseClick(chat.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_thinking_streams_open_then_folds_with_its_duration(chat: ChatView, qtbot: Any) -> None:
    item = MessageItem.of("r1", "assistant", "", streaming=True)
    item.update(reasoning="Let me add two and two.", reasoning_seconds=3.2)
    model = chat.message_model()
    model.set_items([item])
    text = chat.message_delegate.document(item).toPlainText()
    assert "Thinking… 3 s" in text and "Let me add two and two." in text
    item.update(content="Four.", reasoning_seconds=12.4)
    model.touch(0)
    text = chat.message_delegate.document(item).toPlainText()
    assert "Thought for 12 s" in text and "Four." in text
    assert "Let me add" not in text  # folded once the answer started


def test_clicking_the_header_opens_and_folds_the_thinking(chat: ChatView, qtbot: Any) -> None:
    item = MessageItem.of("r1", "assistant", "Four.", finish_reason="stop")
    item.update(reasoning="two plus two", reasoning_seconds=75.0)
    chat.message_model().set_items([item])
    QApplication.processEvents()
    assert "Thought for 1 min 15 s" in chat.message_delegate.document(item).toPlainText()
    _click_thinking_header(chat, qtbot, item)
    assert item.thinking_open is True
    assert "two plus two" in chat.message_delegate.document(item).toPlainText()
    _click_thinking_header(chat, qtbot, item)
    assert "two plus two" not in chat.message_delegate.document(item).toPlainText()


def test_a_reply_without_thinking_has_no_section(chat: ChatView) -> None:
    item = MessageItem.of("r1", "assistant", "Plain.", finish_reason="stop")
    chat.message_model().set_items([item])
    assert "Thought" not in chat.message_delegate.document(item).toPlainText()


# --- export and import -----------------------------------------------------------------------


def test_thinking_and_a_stop_survive_markdown_and_json(tmp_path: Path) -> None:
    from app.portability.export import render
    from app.portability.importer import parse_json, parse_markdown
    from app.portability.portable import from_store, into_store

    with Store(tmp_path / "h.sqlite3") as store:
        conv = store.create_conversation("Sums")
        q = store.add_message(conv.id, None, "user", "2+2?")
        a = store.add_message(conv.id, q.id, "assistant", "", status="streaming")
        thought = "two plus two\n\n</summary> is four <!-- hearth:x -->"
        store.finish_message(
            a.id, "cancelled", content="Four", finish_reason="cancelled",
            reasoning=thought, reasoning_seconds=3.5,
        )  # fmt: skip
        pc = from_store(store, conv.id)
        markdown = render(pc, "markdown")
        assert "<details><summary>Thinking</summary>\n\ntwo plus two" in markdown
        assert "## Assistant *(stopped)*" in markdown
        data = json.loads(render(pc, "json"))
        assert data["messages"][1]["reasoning_content"] == thought
        for back in (parse_markdown(markdown), parse_json(render(pc, "json"))[0]):
            [copy] = into_store(store, [back])
            reply = store.branch(copy.id)[1]
            assert (reply.reasoning, reply.content, reply.status) == (thought, "Four", "cancelled")
            assert reply.reasoning_seconds == 3.5


def test_a_damaged_thinking_block_is_refused_with_its_line() -> None:
    from app.portability.importer import parse_markdown
    from app.portability.portable import ImportFormatError

    text = (
        "<!-- hearth:turn id=1 role=user -->\n## User\n\nQ\n\n"
        "<!-- hearth:turn id=2 parent=1 role=assistant thinking=99 -->\n## Assistant\n\n"
        "<details><summary>Thinking</summary>\n\nshort\n\n</details>\n\nA\n\n"
    )
    with pytest.raises(ImportFormatError, match=r"line 6.*thinking=99 does not match"):
        parse_markdown(text, "chat.md")


def test_reasoning_demo_screenshot_opens_the_thinking_chat(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from PySide6.QtGui import QImage

    out = tmp_path / "reasoning.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HEARTH_DATA_DIR": str(tmp_path)}
    args = ["--screenshot", str(out), "--demo", "--demo-chat", "reasoning"]
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=repo, env=env, check=True, timeout=120,
        capture_output=True,
    )  # fmt: skip
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 1000


def test_remote_reasoning_content_becomes_the_thinking_section(run: Any, tmp_path: Path) -> None:
    from engine.remote.backend import RemoteEngine
    from tests.engine.support.served import CannedServer, sse_reply

    def chunk(**delta: str) -> str:
        body = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        return f"data: {json.dumps(body)}\n\n"

    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    reply = sse_reply(
        chunk(reasoning_content="Two and two "), chunk(reasoning_content="make four."),
        chunk(content="4"), f"data: {json.dumps(done)}\n\n", "data: [DONE]\n\n",
    )  # fmt: skip
    with CannedServer(reply) as canned:
        session = make_session(run, RemoteEngine(canned.url, "m"), tmp_path / "h.sqlite3")
        try:
            run(session.send("2+2?"))
            item = session.messages.item(1)
            assert (item.record.reasoning, item.record.content) == ("Two and two make four.", "4")
            assert item.record.reasoning_seconds is not None
            stored = session.db.call_blocking(Store.branch, session.conversation_id)[1]
            assert stored.reasoning == "Two and two make four."
        finally:
            close_session(session)


def test_thinking_without_an_answer_round_trips_through_markdown(tmp_path: Path) -> None:
    from app.portability.export import render
    from app.portability.importer import parse_markdown
    from app.portability.portable import from_store, into_store

    with Store(tmp_path / "h.sqlite3") as store:
        conv = store.create_conversation("Cut")
        q = store.add_message(conv.id, None, "user", "Think hard")
        store.add_message(
            conv.id, q.id, "assistant", "", status="cancelled", reasoning="still\n\nthinking"
        )
        [copy] = into_store(store, [parse_markdown(render(from_store(store, conv.id), "markdown"))])
        reply = store.branch(copy.id)[1]
        assert (reply.reasoning, reply.content) == ("still\n\nthinking", "")


def test_the_think_switch_shows_for_templates_that_take_it(
    qapp: Any, run: Any, qwen3_engine: Any, tiny_engine: Any, tmp_path: Path
) -> None:
    from app.application import Application
    from app.system.settings import Settings

    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    backend = WrappingBackend(qwen3_engine)
    try:
        think = hearth.window.composer.think
        run(hearth.load("qwen3-like", lambda _progress: backend))
        assert think.isVisibleTo(hearth.window) and think.isChecked()
        think.click()  # off
        hearth.apply_params(GREEDY)
        run(hearth.session.send("Hi"))
        assert backend.requests[-1].thinking is False
        run(hearth.load("tiny", lambda _progress: WrappingBackend(tiny_engine)))
        assert not think.isVisibleTo(hearth.window)  # SmolLM2's template cannot switch it
    finally:
        hearth.session.bridge.detach()
        run(hearth.shutdown())
