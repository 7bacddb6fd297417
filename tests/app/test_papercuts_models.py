"""A new user's papercuts of issue 34 (part C) about models: *On this computer* says a loaded
model was used now (C8), *Recent* shows a model's name after a restart too (C9), the Hub
search hint suggests a family the catalogue offers (C13), and a Chinese question to the
bundled model points to the catalogue's Qwen3.5 (C1). Real widgets offscreen, a real SQLite
store, real settings files, a real GGUF file and the real engine (tiny random model)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtCore import Qt

from app.application import Application
from app.chat.repetition import RepetitionWatch
from app.system.secrets import KeyStore
from app.system.settings import Settings
from app.views.models.dialog import ModelsDialog
from app.views.models.local import LocalModelsTab
from engine.types import Backend, LoadProgress, ModelInfo, SamplingParams
from tests.app.conftest import GatedBackend
from tests.app.test_models_dialog import closed_port_url
from tests.app.test_secrets import MemoryKeyring

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=4, repetition_penalty=1.0)


class Named(GatedBackend):
    """The shared tiny engine presented as the model file ``path`` declaring ``name``."""

    def __init__(self, inner: Backend, path: Path, name: str) -> None:
        super().__init__(inner)
        self._info = dataclasses.replace(inner.info, path=str(path), name=name)

    @property
    def info(self) -> ModelInfo:
        return self._info


def _as(backend: Backend, path: Path, name: str) -> Callable[[Any], Backend]:
    def build(_progress: Callable[[LoadProgress], None]) -> Backend:
        return Named(backend, path, name)

    return build


@pytest.fixture
def gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from bench.synth.core import write_tiny_model

    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    path = tmp_path / "models" / "tiny-llama-Q8_0.gguf"
    path.parent.mkdir()
    write_tiny_model(path, "llama", "Q8_0")
    return path


def _start(qapp: Any, run: Any, tmp_path: Path) -> Application:
    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    return hearth


def _cells(tab: LocalModelsTab, path: Path) -> dict[str, str]:
    table = tab.table
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    [row] = [r for r, m in enumerate(tab.models) if Path(m.path) == path]
    return {h: table.item(row, c).text() for c, h in enumerate(headers)}


def test_c8_c9_a_loaded_model_was_used_now_and_keeps_its_name_in_recent(
    qapp: Any, run: Any, tmp_path: Path, tiny_engine: Backend, gguf: Path, qtbot: Any
) -> None:
    hearth = _start(qapp, run, tmp_path)
    try:
        # Opened with "Open GGUF file…", not through the Models window.
        run(hearth.load(str(gguf), _as(tiny_engine, gguf, "Tiny Llama")))
        tab = LocalModelsTab()
        qtbot.addWidget(tab)
        tab.in_use = lambda: str(gguf)
        run(tab.refresh())
        assert _cells(tab, gguf)["Last used"] == "Now"  # was "Never" beside the loaded model
        tab.in_use = lambda: ""  # another model loaded later: the time it was last used
        run(tab.refresh())
        assert _cells(tab, gguf)["Last used"] not in ("Now", "Never")
        labels = [a.text() for a in hearth.window.model_menu.actions()]
        assert "Tiny Llama" in labels
    finally:
        hearth.session.bridge.detach()
        run(hearth.shutdown())

    again = _start(qapp, run, tmp_path)  # Hearth started again: nothing loaded yet
    try:
        labels = [a.text() for a in again.window.model_menu.actions()]
        assert "Tiny Llama" in labels and str(gguf) not in labels  # was the raw path
    finally:
        run(again.shutdown())


def test_c13_the_hub_search_hint_suggests_families_the_catalogue_offers(
    qtbot: Any, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.hub.catalogue import load_catalogue

    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other apps' models
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_hub_endpoint(closed_port_url())  # offline: nothing is downloaded
    dialog = ModelsDialog(settings, KeyStore())
    qtbot.addWidget(dialog)
    try:
        run(dialog.load(ram_available=8 * 2**30))
    finally:
        keyring.set_keyring(previous)
    hint = dialog.search.query.placeholderText()
    assert hint.startswith("e.g. ") and "qwen2.5" not in hint  # a family the catalogue retired
    offered = {e.name.lower() for e in load_catalogue()}
    suggested = hint.removeprefix("e.g. ").split(", ")
    assert len(suggested) == 3 and set(suggested) <= offered
    assert suggested[0].startswith("qwen3.5")  # the catalogue's first family


async def _until(done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _send(hearth: Application, run: Any, qtbot: Any, text: str) -> None:
    """Type ``text`` and press Send, then wait for the reply to be written."""
    session, composer = hearth.session, hearth.window.composer
    count = session.messages.rowCount()
    composer.set_text(text)
    qtbot.mouseClick(composer.button, Qt.MouseButton.LeftButton)
    run(_until(lambda: session.messages.rowCount() >= count + 2 and not session.busy))


def test_c1_chinese_to_the_bundled_model_offers_qwen35_once_until_dismissed(
    qapp: Any, run: Any, tmp_path: Path, tiny_engine: Backend, qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other apps' models
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_hub_endpoint(closed_port_url())  # the catalogue's checks stay offline
    try:
        for run_no in (1, 2, 3):
            hearth = _start(qapp, run, tmp_path)
            hint = hearth.extras.chinese_model_hint
            try:
                # The tiny engine stands in for the bundled model ("bundled" is what is asked).
                run(hearth.load("bundled", _as(tiny_engine, tmp_path / "b.gguf", "SmolLM2")))
                hearth.session.set_params(GREEDY)
                if run_no == 1:
                    _send(hearth, run, qtbot, "What is the capital of France?")
                    assert not hint.isVisibleTo(hearth.window)  # English: nothing to say
                _send(hearth, run, qtbot, "你好，请介绍一下你自己")
                assert hint.isVisibleTo(hearth.window) is (run_no < 3)
                if run_no == 1:
                    hint.get_button.click()
                    dialog = hearth.models.models_dialog
                    run(dialog.load_task)
                    assert dialog.tabs.currentWidget() is dialog.catalogue
                    [row] = {i.row() for i in dialog.catalogue.table.selectedIndexes()}
                    picked = dialog.catalogue.entries[row]
                    assert picked.family == "Qwen3.5" and picked.recommended
                    dialog.reject()
                    _send(hearth, run, qtbot, "再说一遍")
                    assert not hint.isVisibleTo(hearth.window)  # once a run
                elif run_no == 2:
                    hint.dismiss_button.click()  # for good
                    assert not hint.isVisibleTo(hearth.window)
            finally:
                hearth.session.bridge.detach()
                run(hearth.shutdown())
    finally:
        keyring.set_keyring(previous)


@pytest.mark.slow
def test_c1_the_bundled_model_stuck_repeating_in_chinese_is_stopped_and_told(
    qapp: Any, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    """The real bundled model on the app's own path: greedy, asked in Chinese, it writes
    "🌟🌟🌟…" to the token limit; the reply is stopped after a few dozen and the user told."""
    hearth = _start(qapp, run, tmp_path)
    notices: list[str] = []
    hearth.session.sig_notice.connect(notices.append)
    try:
        assert run(hearth.load("bundled")) is not None
        hearth.session.set_params(GREEDY.replace(max_new_tokens=300))
        _send(hearth, run, qtbot, "你好，请介绍一下你自己")
        reply = hearth.session.messages.item(1)
        assert reply.record.finish_reason == "cancelled", reply.record.content[-80:]
        assert reply.record.stats["completion_tokens"] < 100  # not the 300 it was allowed
        assert any("kept repeating" in n for n in notices), notices
        assert hearth.extras.chinese_model_hint.isVisibleTo(hearth.window)
    finally:
        run(hearth.shutdown())


def test_c1_what_counts_as_stuck_repeating() -> None:
    def first_stop(text: str) -> str | None:
        watch = RepetitionWatch()
        return next((u for c in text if (u := watch.add(c)) is not None), None)

    assert first_stop("好的：" + "；" * 30) == "；"
    assert first_stop("Sure! " + "😉\n\n" * 13) == "😉\n\n"
    assert first_stop("ha" * 11 + "!") is None  # 11 "ha"s and a stop: laughing, not stuck
    assert first_stop("\n" * 200) is None  # blank lines are left to the renderer
    assert first_stop("```python\n# " + "=" * 70 + "\n```\n") is None  # a ruler in code
    assert first_stop("Wait" + "!" * 23) is None  # 23 in a row is still allowed
