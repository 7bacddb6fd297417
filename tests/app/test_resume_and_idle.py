"""Issue 21 in the app: a chat reopened after a restart resumes from its saved cache and the
status bar says so ("Context 3,912 / 8192 tokens (3,890 restored)"); an idle model is unloaded
through the bridge and the next message reloads it with a status line; the preferences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.bridge import DbWorker, EngineBridge, local_engine_factory
from app.chat.session import ChatSession
from app.system.settings import DEFAULT_SAVED_CACHES_GB, Settings
from app.views.main_window import MainWindow
from engine.types import LoadProgress, SamplingParams

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=8)


def _session(run: Any, db: Path) -> tuple[ChatSession, list[LoadProgress]]:
    session = ChatSession(EngineBridge(), DbWorker())
    run(session.open_store(path=db))
    reports: list[LoadProgress] = []
    session.sig_load_progress.connect(reports.append)
    factory = local_engine_factory("bundled", saved_caches_bytes=2**30)
    run(session.load_model(factory))
    session.set_params(GREEDY)
    return session, reports


def _close(session: ChatSession) -> None:
    session.bridge.close_blocking()  # closing the engine writes the live chat's cache
    session.db.close_blocking()


def test_a_reopened_chat_resumes_and_an_idle_model_reloads(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qtbot: Any
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_CHAT_CACHE_DIR", str(tmp_path / "cache" / "conversations"))
    db = tmp_path / "hearth.sqlite3"
    first, _reports = _session(run, db)
    try:
        run(first.send("Name three colours."))
        chat = first.conversation_id
        assert chat
        run(first.open_conversation(None))  # leaving the chat writes its cache
        saved = tmp_path / "cache" / "conversations"
        qtbot.waitUntil(lambda: any(saved.glob("*.hkv")), timeout=120_000)
    finally:
        _close(first)

    session, reports = _session(run, db)  # the app started again
    window = MainWindow(session)
    qtbot.addWidget(window)
    try:
        run(session.open_conversation(chat))
        run(session.send("Three more."))
        stats = session.messages.item(3).record.stats
        assert stats["cached_prompt_tokens"] > 0
        assert "restored)" in window.context_label.text()

        assert run(session.bridge.unload_if_idle(0))  # as the idle timer does
        reports.clear()
        run(session.send("And one more."))
        assert [r.stage for r in reports][:1] == ["reload"]
        assert session.messages.item(5).record.content.strip()
    finally:
        _close(session)


def test_the_preferences_default_to_saved_caches_on_and_idle_unload_off(tmp_path: Path) -> None:
    settings = Settings(str(tmp_path / "settings.ini"))
    assert settings.idle_unload_minutes() == 0
    assert settings.saved_caches_gb() == DEFAULT_SAVED_CACHES_GB
    settings.set_idle_unload_minutes(30)
    settings.set_saved_caches_gb(0)
    assert (settings.idle_unload_minutes(), settings.saved_caches_gb()) == (30, 0)
    with pytest.raises(ValueError, match="idle minutes"):
        settings.set_idle_unload_minutes(-5)
