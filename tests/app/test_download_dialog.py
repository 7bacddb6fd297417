"""The download dialog on real widgets offscreen, downloading with the real `engine.hub`
download from a local Hub-like server (tests/engine/support/fake_hub.py, reached by its endpoint).

"During the download" is made deterministic the way tests/app/conftest.py's GatedBackend does
it: the real download runs on its worker thread and, after its first bytes, waits in the
progress callback until the test opens a gate. What the GUI shows meanwhile is checked, then
Cancel is pressed and the gate opened: the engine sees the cancel at its very next chunk.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtWidgets import QMessageBox

from app.hub.downloads import HubAccess
from app.system.secrets import KeyStore
from app.system.settings import Settings
from app.views.models.dialog import ModelsDialog
from app.views.models.download_dialog import DownloadDialog, Phase
from engine.hub.download import download, pending_downloads
from engine.hub.search import list_gguf_files
from tests.app.test_secrets import MemoryKeyring
from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import write_tiny_gguf

REPO = "someone/Tiny-Llama-GGUF"
NAME = "tiny-llama-Q4_1.gguf"
SIZE = 3 * 2**20  # a few dozen chunks: there is a "during"
GATE_TIMEOUT_S = 60  # a safety net only: the test opens the gate long before


class Gate:
    """Wraps the real download; its progress callback pauses once after the first bytes."""

    def __init__(self, *, at_end: bool = False) -> None:
        self.opened = threading.Event()
        self.reached = threading.Event()
        self.armed = True
        self.at_end = at_end  # pause once every byte is in (before the sha256 verdict)

    def download(self, file: Any, *, progress: Callable[[int, int], None], **kw: Any) -> Path:
        def gated(done: int, total: int) -> None:
            progress(done, total)
            here = done >= total if self.at_end else done > 0
            if self.armed and here and not self.reached.is_set():
                self.reached.set()
                self.opened.wait(GATE_TIMEOUT_S)

        return download(file, progress=gated, **kw)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (a safety limit, not a timed assertion)."""
    for _ in range(GATE_TIMEOUT_S * 100):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")  # pragma: no cover


@pytest.fixture
def gguf_bytes(tmp_path: Path) -> bytes:
    tiny = write_tiny_gguf(tmp_path / "tiny.gguf").read_bytes()
    return tiny + b"\0" * (SIZE - len(tiny))  # readers ignore bytes after the tensors


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Any:
    import huggingface_hub.constants

    # tests/conftest.py keeps huggingface_hub offline; this server is on loopback.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with FakeHub() as fake:
        yield fake


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return folder


def hub_file(hub: FakeHub, name: str = NAME, repo: str = REPO) -> Any:
    (file,) = [f for f in list_gguf_files(repo, endpoint=hub.endpoint) if f.filename == name]
    return file


def test_progress_cancel_and_resume_to_a_verified_model(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes
) -> None:
    hub.add(REPO, NAME, gguf_bytes)
    gate = Gate()
    dialog = DownloadDialog(hub_file(hub), HubAccess(hub.endpoint), download_fn=gate.download)
    qtbot.addWidget(dialog)
    assert dialog.phase is Phase.READY and dialog.resume_button.text() == "Download"

    async def cancel_midway() -> Path | None:
        task = asyncio.ensure_future(dialog.run_download())
        await until(lambda: (gate.reached.is_set() and dialog.bar.value() > 0) or task.done())
        assert not task.done(), dialog.status.text()
        assert dialog.phase is Phase.RUNNING and dialog.status.text() == "Downloading…"
        assert 0 < dialog.bar.value() < 1000
        assert " of 3.0 MB" in dialog.bytes_label.text()
        assert not dialog.cancel_button.isHidden() and dialog.use_button.isHidden()
        dialog.cancel_button.click()
        gate.opened.set()
        return await task

    assert run(cancel_midway()) is None
    assert dialog.phase is Phase.PAUSED and "Resume" in dialog.status.text()
    assert not dialog.resume_button.isHidden() and not (models_dir / NAME).exists()
    (pending,) = pending_downloads()
    assert 0 < pending.downloaded < SIZE  # stopped part-way, the part kept

    path = run(dialog.run_download())  # Resume: the same dialog, the same partial file
    assert path == models_dir / NAME and path.read_bytes() == gguf_bytes
    ranges = hub.ranges(NAME)
    assert ranges[0] is None and ranges[-1] is not None and ranges[-1].startswith("bytes=")
    assert ranges[-1] == f"bytes={pending.downloaded}-"  # resumed, not restarted
    assert dialog.phase is Phase.DONE and "sha256" in dialog.status.text()
    assert dialog.bar.value() == 1000 and not dialog.use_button.isHidden()
    with qtbot.waitSignal(dialog.sig_use_requested) as used:
        dialog.use_button.click()
    assert used.args == [str(path)]


def test_the_sha256_check_is_shown_once_every_byte_is_in(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes
) -> None:
    hub.add(REPO, NAME, gguf_bytes)
    gate = Gate(at_end=True)
    dialog = DownloadDialog(hub_file(hub), HubAccess(hub.endpoint), download_fn=gate.download)
    qtbot.addWidget(dialog)

    async def verify() -> Path | None:
        task = asyncio.ensure_future(dialog.run_download())
        await until(lambda: dialog.phase is Phase.VERIFYING or task.done())
        assert dialog.status.text() == "Checking sha256…"
        assert dialog.bar.maximum() == 0  # busy: hashing has no byte count to show
        assert not dialog.cancel_button.isEnabled()
        gate.opened.set()
        return await task

    assert run(verify()) == models_dir / NAME
    assert dialog.phase is Phase.DONE and dialog.bar.maximum() == 1000


def test_a_corrupted_download_is_refused_and_leaves_no_model(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes
) -> None:
    hub.add(REPO, NAME, gguf_bytes, corrupt=True)
    dialog = DownloadDialog(hub_file(hub), HubAccess(hub.endpoint))
    qtbot.addWidget(dialog)
    assert run(dialog.run_download()) is None
    assert dialog.phase is Phase.FAILED and "sha256" in dialog.status.text()
    assert dialog.use_button.isHidden() and not dialog.resume_button.isHidden()
    assert not (models_dir / NAME).exists()
    assert [p for p in models_dir.rglob("*") if p.is_file() and NAME in p.name] == []


def test_gated_repo_without_token_points_to_the_token_field(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes, tmp_path: Path
) -> None:
    hub.add(REPO, NAME, gguf_bytes)
    file = hub_file(hub)
    hub.gated.add(REPO)
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        settings = Settings(str(tmp_path / "settings.ini"))
        settings.set_hub_endpoint(hub.endpoint)
        models = ModelsDialog(settings, KeyStore())
        qtbot.addWidget(models)
        dialog = models.open_download(file, start=False)
        assert run(dialog.run_download()) is None
        assert dialog.phase is Phase.FAILED and "token" in dialog.status.text()
        assert not dialog.token_button.isHidden()
        dialog.token_button.click()
        assert models.tabs.currentWidget() is models.hub
        models.hub.token_edit.setText("hf_gated_token")
        models.hub.save_token_button.click()
        box = models.hub.token_host_box  # the fake Hub is a mirror: asked once for it
        assert box is not None
        box.button(QMessageBox.StandardButton.Yes).click()
        again = DownloadDialog(file, models.access())  # the token now goes with the request
        qtbot.addWidget(again)
        assert run(again.run_download()) == models_dir / NAME
        assert any(r.authorization for r in hub.requests if r.method == "GET")
    finally:
        keyring.set_keyring(previous)


def test_an_unfinished_download_is_offered_after_a_restart(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes, tmp_path: Path
) -> None:
    hub.add(REPO, NAME, gguf_bytes)
    gate = Gate()
    first = DownloadDialog(hub_file(hub), HubAccess(hub.endpoint), download_fn=gate.download)
    qtbot.addWidget(first)

    async def quit_midway() -> Path | None:
        task = asyncio.ensure_future(first.run_download())
        await until(gate.reached.is_set)
        first.close()  # closing pauses: the partial file stays
        gate.opened.set()
        return await task

    assert run(quit_midway()) is None and first.phase is Phase.PAUSED
    settings = Settings(str(tmp_path / "settings.ini"))
    settings.set_hub_endpoint(hub.endpoint)
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        models = ModelsDialog(settings, KeyStore())  # "after the restart"
        qtbot.addWidget(models)
        (pending,) = run(models.refresh_pending())
        assert pending.file.filename == NAME and 0 < pending.downloaded < SIZE
        assert not models.pending_box.isHidden()
        dialog = models.open_download(pending.file, pending.downloaded, start=False)
        assert dialog.bar.value() > 0  # shows what is already there before resuming

        async def resume() -> Path | None:
            path = await dialog.run_download()
            await models.refresh_task  # the window refreshes its lists once a model lands
            return path

        path = run(resume())
        assert path is not None and hashlib.sha256(path.read_bytes()).hexdigest() == (
            hashlib.sha256(gguf_bytes).hexdigest()
        )
        assert hub.ranges(NAME)[-1] == f"bytes={pending.downloaded}-"
        assert models.pending == [] and models.pending_box.isHidden()
        assert models.local.selected() is not None  # the new model, selected
        assert models.local.selected().path == str(path)
    finally:
        keyring.set_keyring(previous)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("disk_full", "not enough free disk space"),
        ("missing_file", "no such file (404)"),
        ("unknown_repo", "No such model repository"),
        ("offline", "cannot be reached"),
    ],
)
def test_errors_are_said_in_plain_words_and_leave_nothing_behind(
    qtbot: Any,
    run: Any,
    hub: FakeHub,
    models_dir: Path,
    gguf_bytes: bytes,
    case: str,
    expected: str,
) -> None:
    from engine.hub.search import HubFile
    from tests.engine.support.fake_hub import free_port

    hub.add(REPO, NAME, gguf_bytes, advertised_size=10**15 if case == "disk_full" else None)
    file, endpoint = hub_file(hub), hub.endpoint
    if case == "missing_file":
        file = HubFile(REPO, "gone-Q4_K_M.gguf", SIZE, None, "Q4_K_M")
    elif case == "unknown_repo":
        file = HubFile("nobody/nothing-GGUF", NAME, SIZE, None, "Q4_1")
    elif case == "offline":
        endpoint = f"http://127.0.0.1:{free_port()}"
    dialog = DownloadDialog(file, HubAccess(endpoint))
    qtbot.addWidget(dialog)
    assert run(dialog.run_download()) is None
    assert dialog.phase is Phase.FAILED
    assert expected in dialog.status.text(), dialog.status.text()
    assert dialog.token_button.isHidden()  # a token would not help here
    assert not models_dir.exists() or [p for p in models_dir.rglob("*") if p.is_file()] == []


def test_an_unfinished_download_can_be_discarded(
    qtbot: Any, run: Any, hub: FakeHub, models_dir: Path, gguf_bytes: bytes, tmp_path: Path
) -> None:
    hub.add(REPO, NAME, gguf_bytes)
    gate = Gate()
    first = DownloadDialog(hub_file(hub), HubAccess(hub.endpoint), download_fn=gate.download)
    qtbot.addWidget(first)

    async def pause_midway() -> Path | None:
        task = asyncio.ensure_future(first.run_download())
        await until(gate.reached.is_set)
        first.cancel_button.click()
        gate.opened.set()
        return await task

    assert run(pause_midway()) is None
    models = ModelsDialog(Settings(str(tmp_path / "settings.ini")), KeyStore())
    qtbot.addWidget(models)
    (pending,) = run(models.refresh_pending())
    assert pending.part_path.is_file()
    models.discard_pending(pending)
    assert not pending.part_path.exists() and pending_downloads() == []
    assert models.pending_box.isHidden()
