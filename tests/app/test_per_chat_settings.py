"""Per-chat settings and the prompt library, on the real Application offscreen, a real SQLite
file and the real engine (tiny random model): each chat keeps its own system prompt, sampling
settings, thinking switch and model; new chats start from the defaults; everything comes back
after closing and reopening the app."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from app.application import Application
from app.chat.chat_settings import ChatSettings
from app.store import Conversation, Store, StoreError
from app.system.settings import Settings
from engine.types import Backend, SamplingParams
from tests.app.conftest import GatedBackend

CHAT_A = SamplingParams(temperature=0.0, top_k=7, max_new_tokens=4)
CHAT_B = SamplingParams(temperature=1.3, top_k=33, max_new_tokens=4, seed=5)


async def _drain(session: Any) -> None:
    while session._tasks:  # background work started by the window (library changes)
        await asyncio.sleep(0.01)


def _start(qapp: Any, run: Any, tmp_path: Path, engine: Backend) -> Application:
    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    run(hearth.load("tiny", lambda _progress: GatedBackend(engine)))
    return hearth


def _set_prompt(hearth: Application, text: str) -> None:
    hearth.window.panel.system_prompt.setPlainText(text)  # as typing does: emits the change


def test_each_chat_keeps_its_own_settings_across_a_restart(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    hearth = _start(qapp, run, tmp_path, tiny_engine)
    session, panel = hearth.session, hearth.window.panel
    defaults = session.params
    hearth.apply_params(CHAT_A)
    _set_prompt(hearth, "You are a pirate.")
    run(session.send("chat A"))
    a = session.conversation_id
    run(session.open_conversation(None))  # a new chat starts from the defaults…
    assert panel.system_prompt_text() == "You are a pirate."  # …as they were left
    _set_prompt(hearth, "You are a poet.")
    hearth.apply_params(CHAT_B)
    run(session.send("chat B"))
    b = session.conversation_id
    session.set_thinking(False)  # changed while B is open: B keeps it
    run(session.open_conversation(a))
    assert panel.system_prompt_text() == "You are a pirate."
    assert session.system_prompt == "You are a pirate." and session.params == CHAT_A
    assert panel.params() == CHAT_A and session.thinking is None
    _set_prompt(hearth, "You are a tidy pirate.")  # edited while A is open: saved to A
    run(session.open_conversation(b))
    assert (session.system_prompt, session.params, session.thinking) == (
        "You are a poet.", CHAT_B, False,
    )  # fmt: skip
    assert hearth.window.composer.think.isChecked() is False
    run(session.open_conversation(None))
    assert session.params == CHAT_B and defaults != CHAT_B  # the defaults moved with chat B
    run(session.open_conversation(a))
    session.bridge.detach()
    run(hearth.shutdown())

    again = _start(qapp, run, tmp_path, tiny_engine)
    try:
        s = again.session
        assert s.conversation_id == a  # the last chat reopens…
        assert s.system_prompt == "You are a tidy pirate."  # …with its own prompt
        assert s.params == CHAT_A and again.window.panel.params() == CHAT_A
        assert again.window.panel.system_prompt_text() == "You are a tidy pirate."
        run(s.open_conversation(b))
        assert (s.system_prompt, s.params, s.thinking) == ("You are a poet.", CHAT_B, False)
        stored = s.db.call_blocking(Store.get_conversation, b)
        assert stored.model == "tiny"  # the spec it was used with, for loading it again
        s.bridge.detach()
    finally:
        run(again.shutdown())


def test_unreadable_stored_settings_fall_back_to_the_defaults() -> None:
    defaults = ChatSettings("Be brief.", SamplingParams(top_k=3), None, "bundled")
    conv = Conversation("c", "t", 0, 0, None, "Own prompt", {"top_p": 9, "thinking": "yes"})
    restored = ChatSettings.from_conversation(conv, defaults)
    assert restored == ChatSettings("Own prompt", defaults.params, None, None)
    fine = Conversation("c", "t", 0, 0, "m", "", {**CHAT_B.to_dict(), "thinking": True})
    assert ChatSettings.from_conversation(fine, defaults) == ChatSettings("", CHAT_B, True, "m")


def test_prompt_library_saves_picks_renames_and_deletes(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    hearth = _start(qapp, run, tmp_path, tiny_engine)
    window, session = hearth.window, hearth.session
    bar = window.prompt_bar
    try:
        _set_prompt(hearth, "Answer in French.")
        bar.sig_save_requested.emit("French")
        run(_drain(session))
        assert [bar.combo.itemText(i) for i in range(bar.combo.count())] == ["Custom", "French"]
        assert bar.combo.currentText() == "French"  # the box holds exactly that prompt
        _set_prompt(hearth, "Something else")
        assert bar.combo.currentText() == "Custom"
        bar.combo.setCurrentIndex(1)
        bar.combo.activated.emit(1)  # the user picks "French"
        assert window.panel.system_prompt_text() == "Answer in French."
        assert session.system_prompt == "Answer in French."
        bar.sig_rename_requested.emit(bar.current().id, "Français")
        run(_drain(session))
        assert bar.combo.currentText() == "Français"
        bar.sig_delete_requested.emit(bar.current().id)
        run(_drain(session))
        assert bar.combo.count() == 1 and bar.combo.currentText() == "Custom"
        assert window.panel.system_prompt_text() == "Answer in French."  # the chat keeps it
    finally:
        session.bridge.detach()
        run(hearth.shutdown())


def test_prompt_library_store_rules(tmp_path: Path) -> None:
    from app.store.prompts import delete_prompt, list_prompts, rename_prompt, save_prompt

    with Store(tmp_path / "h.sqlite3") as store:
        first = save_prompt(store, "  Tutor ", "Explain step by step.")
        assert first.name == "Tutor"
        again = save_prompt(store, "Tutor", "Explain slowly.")  # same name: new text
        assert again.id == first.id and list_prompts(store)[0].text == "Explain slowly."
        other = save_prompt(store, "b-side", "x")
        assert [p.name for p in list_prompts(store)] == ["b-side", "Tutor"]
        with pytest.raises(StoreError, match="already called 'Tutor'"):
            rename_prompt(store, other.id, "Tutor")
        with pytest.raises(StoreError, match="needs a name"):
            save_prompt(store, "   ", "x")
        delete_prompt(store, other.id)
        with pytest.raises(StoreError, match="no saved prompt"):
            delete_prompt(store, other.id)


def test_opening_a_chat_loads_the_model_it_was_used_with(
    qapp: Any, run: Any, tiny_model_dir: Path, tmp_path: Path
) -> None:
    import shutil

    from tests.engine.loop.test_text import QWEN3_LIKE_TEMPLATE

    other = tmp_path / "qwen3-like"
    shutil.copytree(tiny_model_dir, other)
    (other / "chat_template.jinja").write_text(QWEN3_LIKE_TEMPLATE, encoding="utf-8")
    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    session = hearth.session
    try:
        run(hearth.load(str(tiny_model_dir)))  # the real local factory, as the menu does
        hearth.apply_params(CHAT_A)
        run(session.send("chat on the first model"))
        a = session.conversation_id
        run(session.open_conversation(None))
        run(hearth.load(str(other)))
        run(session.send("chat on the second model"))
        assert session.model_info is not None and session.model_info.thinking_toggle
        run(session.open_conversation(a))
        run(_drain(session))  # the switch back loads in the background
        assert session.model_spec == str(tiny_model_dir)
        assert session.model_info is not None and not session.model_info.thinking_toggle
        run(session.open_conversation(None))
        run(_drain(session))
        assert session.model_spec == str(tiny_model_dir)  # a new chat keeps the loaded one
    finally:
        run(hearth.shutdown())
