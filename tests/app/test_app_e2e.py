"""The whole app: --screenshot in a subprocess, and (slow) the bundled model end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QImage

from app.application import Application
from app.system.settings import Settings
from engine.types import Backend, SamplingParams

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HEARTH_DATA_DIR": str(tmp_path)}


def test_screenshot_demo_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "shot.png"
    subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), "--demo"],
        cwd=REPO,
        env=_env(tmp_path),
        check=True,
        timeout=120,
        capture_output=True,
    )
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 1000 and image.height() >= 600


def test_application_window_appears_before_the_model_and_sends(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    from tests.app.conftest import GatedBackend

    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    hearth.window.show()
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    assert not hearth.window.composer.button.isEnabled()  # no model yet: typing still works
    run(hearth.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
    assert hearth.window.composer.button.text() == "Send"
    hearth.apply_params(SamplingParams(temperature=0.0, max_new_tokens=8))
    hearth.window.composer.set_text("Hello 你好")
    hearth.window.composer.sig_send_requested.emit(hearth.window.composer.text())
    run(_until_finished(hearth))
    assert hearth.window.composer.text() == ""  # cleared only after the send was accepted
    assert hearth.session.messages.rowCount() == 2
    assert "Context" in hearth.window.context_label.text()
    hearth.session.bridge.detach()
    run(hearth.shutdown())


async def _until_finished(hearth: Application) -> None:
    import asyncio

    while hearth.session.messages.rowCount() < 2 or hearth.session.busy:
        await asyncio.sleep(0.01)  # waiting for the engine thread, not asserting on time


@pytest.mark.slow
def test_bundled_model_answers_end_to_end(
    bundled_engine: Backend, run: Any, tmp_path: Path
) -> None:
    from tests.app.conftest import close_session, make_session

    session = make_session(run, bundled_engine, tmp_path / "db.sqlite3")
    try:
        session.set_params(SamplingParams(temperature=0.0, max_new_tokens=24))
        run(session.send("What is the capital of France?"))
        reply = session.messages.item(1)
        assert reply.record.finish_reason in ("stop", "length") and reply.record.content.strip()
        assert reply.record.stats["decode_tokens_per_s"] > 0
        run(session.send("And of Germany?"))
        assert session.messages.item(3).record.stats["cached_prompt_tokens"] > 0
    finally:
        close_session(session)


def test_bench_ui_prints_json(tiny_model_dir: Path, tmp_path: Path) -> None:
    args = f"ui --model {tiny_model_dir} --max-tokens 8 --history 40 --json".split()
    done = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        env=_env(tmp_path),
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["tokens"] >= 1 and figures["max_stall_ms"] >= 0
    assert figures["tokens_painted_per_s"] > 0


def test_drafts_search_delete_undo_and_restart(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    import asyncio

    from tests.app.conftest import GatedBackend

    settings_path, db = str(tmp_path / "s.ini"), tmp_path / "db.sqlite3"
    hearth = Application(qapp, Settings(settings_path))
    run(hearth.start(db_path=db, model=None))
    run(hearth.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
    hearth.apply_params(SamplingParams(temperature=0.0, max_new_tokens=4))
    session, window = hearth.session, hearth.window
    run(session.send("第一个对话 about tea"))
    first = session.conversation_id
    window.composer.set_text("an unsent draft 草稿")
    run(session.open_conversation(None))  # switching chats keeps each one's draft
    assert window.composer.text() == ""
    run(session.open_conversation(first))
    assert window.composer.text() == "an unsent draft 草稿"

    run(session.search("对话"))
    assert [r.id for r in session.conversations.rows()] == [first]
    assert "对话" in session.conversations.index(0).data()

    window.on_sidebar_delete_requested(first)
    run(asyncio.sleep(0))
    run(_drain(session))
    assert session.conversations.row_of(first) == -1 and session.conversation_id is None
    window.on_undo_clicked()
    run(_drain(session))
    assert session.conversations.row_of(first) == 0

    run(session.open_conversation(first))
    session.bridge.detach()
    run(hearth.shutdown())
    again = Application(qapp, Settings(settings_path))
    run(again.start(db_path=db, model=None))
    try:
        assert again.session.conversation_id == first  # the last chat reopens
        assert again.window.composer.text() == "an unsent draft 草稿"
        assert again.session.messages.item(0).record.content == "第一个对话 about tea"
    finally:
        run(again.shutdown())


async def _drain(session: Any) -> None:
    import asyncio

    while session._tasks:  # background work started by the window (delete, undo)
        await asyncio.sleep(0.01)


def test_a_remote_endpoint_is_chosen_from_the_picker_and_answers(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path, monkeypatch: Any
) -> None:
    from app.system.endpoints import Endpoint, EndpointList, model_spec
    from engine.serve.server import serve_in_thread
    from tests.app.conftest import GatedBackend

    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path))  # endpoints.json lives there
    with serve_in_thread(GatedBackend(tiny_engine)) as server:
        endpoints = EndpointList()
        endpoint = endpoints.add(Endpoint("Local test", server.url, tiny_engine.info.name))
        endpoints.save()
        hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
        run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
        info = run(hearth.load(model_spec(endpoint)))
        assert info is not None and info.backend == "remote"
        assert hearth.model_labels([model_spec(endpoint)]) == {
            model_spec(endpoint): "Local test — " + tiny_engine.info.name
        }
        hearth.apply_params(SamplingParams(temperature=0.0, max_new_tokens=6))
        run(hearth.session.send("Hello over HTTP"))
        reply = hearth.session.messages.item(1)
        assert reply.record.finish_reason in ("stop", "length") and reply.record.error is None
        run(hearth.shutdown())


def test_a_model_that_fails_to_load_shows_a_dialog_and_the_app_keeps_working(
    qapp: Any, run: Any, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QMessageBox

    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    assert run(hearth.load(str(tmp_path / "no-such-model"))) is None
    boxes = hearth.window.findChildren(QMessageBox, "errorDialog")
    assert boxes and "could not be found" in boxes[-1].text()
    assert "Model: none" in hearth.window.model_button.text()
    hearth.window.composer.set_text("still here 还在")
    run(hearth.session.open_conversation(None))  # the rest of the app keeps working
    assert hearth.window.composer.text() == "still here 还在"
    run(hearth.shutdown())
