"""The app's "Serve the local engine" toggle and the greyed-out sampling controls (issue 5).

Real everything: the Application on the tiny engine, the real HTTP server on 127.0.0.1 driven
through the official `openai` client, and a real remote endpoint (another server on loopback)
whose kind ignores top-k, min-p and repetition penalty.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from PySide6.QtWidgets import QMessageBox

from app.application import Application
from app.bridge import remote_engine_factory
from app.system.settings import DEFAULT_SERVER_PORT, Settings
from engine.serve.server import serve_in_thread
from engine.types import Backend
from tests.app.conftest import GatedBackend

IGNORED_BY_OPENAI = ("top_k", "min_p", "repetition_penalty")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def hearth(qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path) -> Iterator[Application]:
    """The app on the tiny engine (wrapped so loading another model never closes the shared
    engine), with its server port set to a free one."""
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_server_port(_free_port())
    app = Application(qapp, settings)
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    run(app.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
    yield app
    run(app.shutdown())


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30)


def _toggle(run: Any, hearth: Application, on: bool) -> str:
    hearth.window.server_action.setChecked(on)  # as a click on the menu item does
    assert hearth.server_task is not None
    return str(run(hearth.server_task))


def test_settings_default_off_and_validate_the_port(tmp_path: Path) -> None:
    settings = Settings(str(tmp_path / "s.ini"))
    assert settings.serve_local() is False
    assert settings.server_port() == DEFAULT_SERVER_PORT
    settings.set_serve_local(True)
    settings.set_server_port(9123)
    settings.sync()
    again = Settings(str(tmp_path / "s.ini"))
    assert again.serve_local() is True and again.server_port() == 9123
    with pytest.raises(ValueError, match="65535"):
        settings.set_server_port(70000)


def test_toggle_serves_the_running_engine_and_off_stops_it(
    hearth: Application, run: Any, loop: Any, tiny_engine: Backend
) -> None:
    port = hearth.settings.server_port()
    window = hearth.window
    assert not window.server_action.isChecked() and not window.server_label.isVisible()
    assert str(port) in window.server_action.text()

    url = _toggle(run, hearth, True)
    assert url == f"http://127.0.0.1:{port}/v1"
    assert hearth.settings.serve_local() is True
    assert url in window.server_label.text()
    client = _client(url)
    assert [m.id for m in client.models.list().data] == [tiny_engine.info.name]
    # A completion while the app's event loop keeps running: the request queues on the
    # bridge's engine thread, the one the chat window uses.
    reply = run(
        loop.run_in_executor(
            None,
            lambda: client.chat.completions.create(
                model=tiny_engine.info.name,
                messages=[{"role": "user", "content": "Hello 你好"}],
                max_tokens=5,
                temperature=0,
            ),
        )
    )
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage is not None and reply.usage.completion_tokens >= 1
    hearth.apply_params(hearth.session.params.replace(temperature=0.0, max_new_tokens=4))
    run(hearth.session.send("and the chat still works"))  # same engine, same thread
    assert hearth.session.messages.item(1).record.finish_reason in ("stop", "length")

    assert _toggle(run, hearth, False) == ""
    assert hearth.settings.serve_local() is False and window.server_label.text() == ""
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=5)


def test_switching_models_stops_the_server_and_serves_the_new_local_one(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    url = _toggle(run, hearth, True)
    with serve_in_thread(GatedBackend(tiny_engine)) as other:
        factory = remote_engine_factory(other.url, tiny_engine.info.name, lambda: None, "vllm")
        assert run(hearth.load("remote", factory)) is not None
        # A remote endpoint is not re-served: the port is released, the wish is remembered.
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/models", timeout=5)
        assert hearth.window.server_action.isChecked() and hearth.settings.serve_local()
        assert not hearth.window.server_label.isVisible()
    run(hearth.load("tiny again", lambda _progress: GatedBackend(tiny_engine)))
    assert httpx.get(f"{url}/models", timeout=5).json()["data"][0]["id"] == tiny_engine.info.name
    assert url in hearth.window.server_label.text()


def test_a_taken_port_shows_the_error_and_unticks_the_toggle(hearth: Application, run: Any) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", hearth.settings.server_port()))
        squatter.listen()
        assert _toggle(run, hearth, True) == ""
    boxes = hearth.window.findChildren(QMessageBox, "errorDialog")
    assert boxes and str(hearth.settings.server_port()) in boxes[-1].informativeText()
    assert not hearth.window.server_action.isChecked()
    assert hearth.settings.serve_local() is False


def test_controls_an_endpoint_ignores_are_greyed_out_and_come_back_for_the_local_engine(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    panel = hearth.window.panel
    assert all(panel.control(name).isEnabled() for name in IGNORED_BY_OPENAI)
    with serve_in_thread(GatedBackend(tiny_engine)) as server:
        # "openai" is the kind that honours only temperature, top_p, seed and stop.
        factory = remote_engine_factory(server.url, tiny_engine.info.name, lambda: None, "openai")
        info = run(hearth.load("remote", factory))
        assert info is not None and "top_k" not in info.supported_params
        for name in IGNORED_BY_OPENAI:
            assert not panel.control(name).isEnabled()
            assert "ignores" in panel.control(name).toolTip()
        for name in ("temperature", "top_p", "seed", "stop"):
            assert panel.control(name).isEnabled()
        assert panel.max_tokens.isEnabled()
    run(hearth.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
    for name in IGNORED_BY_OPENAI:
        assert panel.control(name).isEnabled() and panel.control(name).toolTip() == ""
    assert "newline" in panel.control("stop").toolTip()  # its own help text is back


def test_a_restart_remembers_the_toggle_and_serves_once_the_model_is_loaded(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_server_port(_free_port())
    settings.set_serve_local(True)  # as the previous run left it
    url = f"http://127.0.0.1:{settings.server_port()}/v1"
    hearth = Application(qapp, settings)
    try:
        assert hearth.window.server_action.isChecked()
        run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
        assert hearth.bridge.server_url is None  # nothing to serve before a model loads
        run(hearth.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
        assert hearth.bridge.server_url == url and url in hearth.window.server_label.text()
        assert httpx.get(f"{url}/models", timeout=5).status_code == 200
    finally:
        run(hearth.shutdown())
    with pytest.raises(httpx.ConnectError):  # shutting the app down released the port
        httpx.get(f"{url}/models", timeout=5)
