"""Per-chat Chinese reply options wired end to end: a real reply stream (real HTTP, the remote
backend, the real session and SQLite file) is converted as it streams, in what is shown and
what is stored, with code left alone; the options are saved with the chat and come back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions, ReplyPostProcessor, process_markdown
from app.chat.reasoning import ReplyText
from app.listmodels.messages import MessageItem
from app.store import Store
from app.views.dialogs.chinese_options import ChineseOptionsBox
from tests.app.conftest import close_session, make_session

TAIWAN = ChineseOptions(script="traditional_tw", punctuation=True, spacing=True)
# A reply cut into deltas in awkward places: inside the phrase 软件, inside the code fence.
DELTAS = (
    "这个软",
    "件很好,我们用Python写",
    "了程序。\n\n``",
    '`python\nprint("软件")\n``',
    "`\n最后用`打印软件`看结果,网络",
)
FULL = "".join(DELTAS)


def _stream(*deltas: str) -> bytes:
    from tests.engine.support.served import sse_reply

    def chunk(text: str) -> str:
        body = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        return f"data: {json.dumps(body)}\n\n"

    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return sse_reply(*map(chunk, deltas), f"data: {json.dumps(done)}\n\n", "data: [DONE]\n\n")


def test_a_streamed_reply_is_converted_in_view_and_store_and_code_is_kept(
    run: Any, tmp_path: Path
) -> None:
    from engine.remote.backend import RemoteEngine
    from tests.engine.support.served import CannedServer

    with CannedServer(_stream(*DELTAS)) as canned:
        session = make_session(run, RemoteEngine(canned.url, "m"), tmp_path / "h.sqlite3")
        try:
            session.set_chinese(TAIWAN)
            run(session.send("介绍一下"))
            shown = session.messages.item(1).record.content
            stored = session.db.call_blocking(Store.branch, session.conversation_id)[1]
        finally:
            close_session(session)
    assert shown == stored.content == process_markdown(FULL, TAIWAN)
    assert shown.startswith("這個軟體很好，我們用 Python 寫了程式。")
    assert 'print("软件")' in shown  # the fenced code is untouched
    assert "`打印软件`" in shown  # and so is the inline span
    assert shown.endswith("網路")  # the held-back tail was flushed at the end


def test_with_the_options_off_the_reply_is_exactly_what_was_sent(run: Any, tmp_path: Path) -> None:
    from engine.remote.backend import RemoteEngine
    from tests.engine.support.served import CannedServer

    with CannedServer(_stream(*DELTAS)) as canned:
        session = make_session(run, RemoteEngine(canned.url, "m"), tmp_path / "h.sqlite3")
        try:
            run(session.send("介绍一下"))
            assert session.messages.item(1).record.content == FULL
        finally:
            close_session(session)


def test_a_stopped_reply_flushes_the_held_back_text() -> None:
    item = MessageItem.of("r", "assistant", "")
    text = ReplyText(item)
    text.processor = ReplyPostProcessor(ChineseOptions(script="traditional_tw"))
    text.add("软")  # no boundary yet: held back (软件 may follow)
    assert item.record.content == ""
    text.finish()  # what a stop does through ReplyRun.conclude
    assert item.record.content == "軟"


def test_the_options_are_saved_with_the_chat_and_restored(run: Any, tmp_path: Path) -> None:
    from engine.remote.backend import RemoteEngine
    from tests.engine.support.served import CannedServer

    db = tmp_path / "h.sqlite3"
    with CannedServer(_stream("好")) as canned:
        session = make_session(run, RemoteEngine(canned.url, "m"), db)
        try:
            run(session.send("hi"))
            chat_id = session.conversation_id
            session.set_chinese(ChineseOptions(script="traditional_hk", spacing=True))
            run(session.open_conversation(None))
            assert session.chinese == ChineseOptions()  # a new chat starts from the defaults
        finally:
            close_session(session)
        reopened = make_session(run, RemoteEngine(canned.url, "m"), db)
        try:
            restored: list[ChatSettings] = []
            reopened.sig_settings_restored.connect(restored.append)
            run(reopened.open_conversation(chat_id))
            want = ChineseOptions(script="traditional_hk", spacing=True)
            assert reopened.chinese == want and restored[-1].chinese == want
        finally:
            close_session(reopened)


def test_unreadable_stored_options_fall_back_to_off(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite3") as store:
        conv = store.create_conversation("x", params={"chinese": {"script": "klingon"}})
        settings = ChatSettings.from_conversation(conv, ChatSettings())
    assert settings.chinese == ChineseOptions()


def test_the_panel_box_sets_the_session_and_shows_an_opened_chat(
    qapp: Any, run: Any, tmp_path: Path
) -> None:
    from app.application import Application
    from app.system.settings import Settings
    from engine.remote.backend import RemoteEngine
    from tests.engine.support.served import CannedServer

    with CannedServer(_stream("好")) as canned:
        hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
        session = hearth.session
        try:
            run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
            run(hearth.load("remote", lambda _p: RemoteEngine(canned.url, "m")))
            box = hearth.window.findChild(ChineseOptionsBox)
            assert box is not None
            box.script.setCurrentIndex(box.script.findData("simplified"))
            box.punctuation.setChecked(True)
            assert session.chinese == ChineseOptions(script="simplified", punctuation=True)
            run(session.send("hi"))  # the new chat started from those (the defaults)
            chat_id = session.conversation_id
            box.spacing.setChecked(True)  # saved with this chat only
            run(session.open_conversation(None))
            assert box.options() == ChineseOptions(script="simplified", punctuation=True)
            run(session.open_conversation(chat_id))
            want = ChineseOptions(script="simplified", punctuation=True, spacing=True)
            assert box.options() == want == session.chinese
        finally:
            run(hearth.shutdown())


def test_new_chats_options_are_remembered_across_a_restart(
    qapp: Any, run: Any, tmp_path: Path
) -> None:
    from app.application import Application
    from app.system.settings import Settings

    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    box = hearth.extras.chinese_options
    box.script.setCurrentIndex(box.script.findData("traditional_tw"))  # no chat open: defaults
    run(hearth.shutdown())
    again = Application(qapp, Settings(str(tmp_path / "s.ini")))
    try:
        run(again.start(db_path=tmp_path / "db.sqlite3", model=None))
        assert again.session.chinese == ChineseOptions(script="traditional_tw")
        assert again.extras.chinese_options.options() == again.session.chinese
    finally:
        run(again.shutdown())
