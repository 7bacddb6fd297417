"""The endpoints dialog against a real Hearth server on loopback, keys in an in-memory keyring,
and a byte search of every file the app wrote (endpoints, database, settings, exports)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backends import fail

from app.portability import export, portable
from app.store import Store
from app.system.endpoints import (
    KINDS,
    Endpoint,
    EndpointError,
    EndpointList,
    endpoint_id_from_spec,
    model_spec,
)
from app.system.secrets import KeyStore
from app.system.settings import Settings
from app.views.dialogs.endpoints import EndpointsDialog
from engine.remote.backend import ENDPOINT_KINDS, RemoteEngine, list_models
from engine.serve.server import serve_in_thread
from engine.types import Finished, GenerationRequest, Message, SamplingParams
from tests.app.test_secrets import MemoryKeyring, files_containing

KEY = "sk-dialog-test-5e4d3c2b1a0f9e8d"


async def lister(base_url: str, api_key: str | None) -> list[str]:
    """What the bridge provides: `list_models` on a worker thread."""
    models = await asyncio.get_running_loop().run_in_executor(None, list_models, base_url, api_key)
    return [m.id for m in models]


@pytest.fixture(scope="module")
def server(tiny_engine: Any):  # type: ignore[no-untyped-def]
    with serve_in_thread(tiny_engine, api_key=KEY) as handle:
        yield handle


@pytest.fixture
def keys() -> Any:
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield KeyStore()
    keyring.set_keyring(previous)


@pytest.fixture
def dialog(qtbot: Any, tmp_path: Path, keys: KeyStore) -> EndpointsDialog:
    widget = EndpointsDialog(EndpointList(tmp_path / "endpoints.json"), keys, lister)
    qtbot.addWidget(widget)
    return widget


def fill(dialog: EndpointsDialog, name: str, url: str, key: str = "") -> None:
    dialog.on_add_clicked()
    dialog.name_edit.setText(name)
    dialog.url_edit.setText(url)
    dialog.key_edit.setText(key)


def test_add_list_models_and_save_puts_the_key_in_the_keyring_only(
    dialog: EndpointsDialog, keys: KeyStore, server: Any, run: Any, tmp_path: Path, tiny_engine
) -> None:  # type: ignore[no-untyped-def]
    fill(dialog, "Local Hearth", server.url, KEY)
    models = run(dialog.fetch_models())
    assert models == [tiny_engine.info.name]
    assert dialog.model_box.currentText() == tiny_engine.info.name
    assert "1 model" in dialog.status.text()
    changed: list[bool] = []
    dialog.sig_endpoints_changed.connect(lambda: changed.append(True))
    assert dialog.on_save_clicked()
    (endpoint,) = EndpointList(tmp_path / "endpoints.json")
    assert (endpoint.name, endpoint.base_url, endpoint.model) == (
        "Local Hearth",
        server.url,
        tiny_engine.info.name,
    )
    assert keys.get(endpoint.id) == KEY and dialog.key_edit.text() == ""
    assert changed and dialog.list.count() == 1
    assert files_containing(tmp_path, KEY) == []


def test_a_wrong_key_shows_the_401_without_the_key(
    dialog: EndpointsDialog, server: Any, run: Any
) -> None:
    fill(dialog, "Bad key", server.url, "sk-totally-wrong-key-000111")
    assert run(dialog.fetch_models()) == []
    text = dialog.status.text()
    assert "401" in text and "sk-totally-wrong-key-000111" not in text


def test_without_a_keyring_the_key_is_kept_for_the_session_only(
    qtbot: Any, tmp_path: Path, server: Any
) -> None:
    keys = KeyStore(fail.Keyring())
    dialog = EndpointsDialog(EndpointList(tmp_path / "endpoints.json"), keys, lister)
    qtbot.addWidget(dialog)
    assert dialog.session_only.isChecked() and not dialog.session_only.isEnabled()
    assert "cannot be saved" in dialog.key_note.text()
    fill(dialog, "Session", server.url, KEY)
    dialog.model_box.setEditText("anything")
    assert dialog.on_save_clicked()
    (endpoint,) = EndpointList(tmp_path / "endpoints.json")
    assert keys.get(endpoint.id) == KEY and keys.has_session_key(endpoint.id)
    assert files_containing(tmp_path, KEY) == []


def test_remove_deletes_the_entry_and_its_key(dialog: EndpointsDialog, keys: KeyStore) -> None:
    fill(dialog, "Gone soon", "http://gpu-box:8000/v1", KEY)
    dialog.model_box.setEditText("llama")
    dialog.on_save_clicked()
    endpoint_id = dialog.list.currentItem().data(256)
    assert keys.get(endpoint_id) == KEY
    dialog.on_remove_clicked()
    assert dialog.list.count() == 0 and keys.get(endpoint_id) is None


def test_invalid_form_reports_and_keeps_what_was_typed(dialog: EndpointsDialog) -> None:
    fill(dialog, "Typo", "gpu-box:8000", KEY)
    dialog.model_box.setEditText("llama")
    assert not dialog.on_save_clicked()
    assert "http://" in dialog.status.text()
    assert dialog.url_edit.text() == "gpu-box:8000" and dialog.key_edit.text() == KEY


def test_use_emits_the_endpoint_id(dialog: EndpointsDialog, qtbot: Any) -> None:
    fill(dialog, "Team vLLM", "http://gpu-box:8000/v1")
    dialog.model_box.setEditText("llama")
    dialog.on_save_clicked()
    with qtbot.waitSignal(dialog.sig_use_requested) as blocker:
        dialog.use_button.click()
    assert blocker.args == [dialog.list.currentItem().data(256)]


def test_endpoint_validation() -> None:
    with pytest.raises(EndpointError, match="name"):
        Endpoint("", "http://a/v1", "m")
    with pytest.raises(EndpointError, match="not in the URL"):
        Endpoint("x", "http://user:pw@a/v1", "m")
    with pytest.raises(EndpointError, match="kind"):
        Endpoint("x", "http://a/v1", "m", kind="mystery")
    assert Endpoint("x", "http://a/v1", "m").engine_kind is None
    assert set(KINDS) - {"auto"} == set(ENDPOINT_KINDS)
    endpoint = Endpoint("x", "http://a/v1", "m")
    assert endpoint_id_from_spec(model_spec(endpoint)) == endpoint.id
    assert endpoint_id_from_spec("bundled") is None


def test_after_real_use_the_key_is_in_no_file_the_app_wrote(
    tmp_path: Path, keys: KeyStore, server: Any, tiny_engine: Any
) -> None:
    """Save an endpoint, chat through it, store and export the chat, record a failure:
    the key is in the keyring and in none of the files."""
    endpoints = EndpointList(tmp_path / "endpoints.json")
    endpoint = endpoints.add(Endpoint("Local", server.url, tiny_engine.info.name, kind="hearth"))
    keys.set(endpoint.id, KEY)
    settings = Settings(str(tmp_path / "settings.ini"))
    settings.add_recent_model(model_spec(endpoint))
    settings.set_last_model(model_spec(endpoint))
    settings.sync()
    question = GenerationRequest(
        (Message("user", "Hello"),), SamplingParams(temperature=0, max_new_tokens=6)
    )
    remote = RemoteEngine(endpoint.base_url, endpoint.model, keys.get(endpoint.id))
    finished = list(remote.generate(question))[-1]
    assert isinstance(finished, Finished) and finished.error is None
    bad = RemoteEngine(endpoint.base_url, endpoint.model, KEY + "x")
    with pytest.raises(Exception) as failure:
        list(bad.generate(question))
    with Store(tmp_path / "hearth.sqlite3") as store:
        chat = store.create_conversation("Remote chat", model=model_spec(endpoint))
        user = store.add_message(chat.id, None, "user", "Hello")
        reply = store.add_message(chat.id, user.id, "assistant", "", status="streaming")
        store.finish_message(
            reply.id, "complete", content=finished.text, finish_reason="stop", stats=finished.stats
        )
        failed = store.add_message(chat.id, user.id, "assistant", "", status="streaming")
        store.finish_message(failed.id, "error", error=str(failure.value))
        conversation = portable.from_store(store, chat.id)
    (tmp_path / "chat.md").write_text(export.to_markdown(conversation), encoding="utf-8")
    (tmp_path / "chat.json").write_text(export.to_json(conversation), encoding="utf-8")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert {"endpoints.json", "settings.ini", "chat.md", "chat.json"} <= set(written)
    assert any(name.startswith("hearth.sqlite3") for name in written)
    assert files_containing(tmp_path, KEY) == []
    assert keys.get(endpoint.id) == KEY
