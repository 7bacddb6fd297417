"""The Models window on real widgets offscreen: the catalogue's verdicts (from the Hub's file
lists on a local Hub-like server, and estimated when the Hub cannot be reached), the models on
this computer (a real GGUF in a temporary HEARTH_MODELS_DIR: listed, used, deleted), and the Hub
address and token (keyring only)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtWidgets import QMessageBox, QPushButton

from app.system.secrets import KeyStore
from app.system.settings import HUB_MIRROR_ENDPOINT, Settings
from app.views.models.dialog import ModelsDialog
from tests.app.test_secrets import MemoryKeyring, files_containing
from tests.engine.support.tiny_gguf import write_tiny_gguf

GIB = 2**30
TOKEN = "hf_test_token_0a1b2c3d4e5f"


async def until(condition: Callable[[], bool], limit_s: float = 300.0) -> None:
    """Let the loop run until ``condition`` holds: worker threads are being waited for (a
    safety limit for a hung test, not a timed assertion)."""
    import asyncio

    for _ in range(int(limit_s * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def closed_port_url() -> str:
    """An address on loopback where nothing listens: connecting is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def keys() -> Any:
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield KeyStore()
    keyring.set_keyring(previous)


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no LM Studio / Ollama models here
    return folder


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(str(tmp_path / "settings.ini"))


@pytest.fixture
def dialog(qtbot: Any, settings: Settings, keys: KeyStore, models_dir: Path) -> ModelsDialog:
    widget = ModelsDialog(settings, keys)
    qtbot.addWidget(widget)
    return widget


def row_of(dialog: ModelsDialog, name_part: str) -> int:
    return next(i for i, e in enumerate(dialog.catalogue.entries) if name_part in e.name)


def test_catalogue_without_the_hub_estimates_verdicts_and_stays_usable(
    dialog: ModelsDialog, settings: Settings, run: Any
) -> None:
    settings.set_hub_endpoint(closed_port_url())
    run(dialog.load(ram_available=8 * GIB))
    cat = dialog.catalogue
    assert len(cat.entries) >= 15 and cat.offline
    small, big = row_of(dialog, "0.8B"), row_of(dialog, "14B")
    assert cat.verdict_of(small) == "Fits (estimate)"
    assert cat.verdict_of(big) == "Won't fit (estimate)"
    assert all(cat.verdict_of(r) != "Checking…" for r in range(len(cat.entries)))
    assert "cannot be reached" in cat.status.text()
    button = cat.download_button(small)
    assert isinstance(button, QPushButton) and not button.isEnabled()
    # RAM needed of available, and a recommended quant, are shown for every entry.
    assert "of 8.0 GB" in cat.table.item(big, 2).text()
    assert cat.table.item(small, 5).text().startswith(cat.entries[small].default_quant)


def test_catalogue_marks_chinese_and_reasoning_models(
    dialog: ModelsDialog, run: Any, settings: Settings
) -> None:
    settings.set_hub_endpoint(closed_port_url())
    run(dialog.load(ram_available=8 * GIB))
    cat = dialog.catalogue
    for row, entry in enumerate(cat.entries):
        text = cat.table.cellWidget(row, 0).text()
        assert ("&nbsp;中文&nbsp;" in text) == entry.chinese, entry.name
        assert ("&nbsp;reasoning&nbsp;" in text) == entry.reasoning, entry.name
        assert f"Licence: <a href='{entry.licence_url}'" in text, entry.name
        assert f">{entry.licence}</a>" in text, entry.name
        assert ("can see: downloads with its vision projector" in text) == entry.multimodal
        assert "text only in Hearth" not in text, entry.name
        assert ("its own terms" in text) == (not entry.open_licence), entry.name
        assert ("&nbsp;recommended&nbsp;" in text) == entry.recommended, entry.name
        assert ("B used per token" in text) == (entry.active_params_b is not None), entry.name


def test_catalogue_speed_of_a_mixture_of_experts_follows_its_active_parameters(
    dialog: ModelsDialog,
    run: Any,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.hub.fit import record_decode_speed

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))  # a speed of our own
    record_decode_speed(weight_bytes=GIB, tok_per_s=10.0)  # 10 GiB of weights read per second
    settings.set_hub_endpoint(closed_port_url())
    run(dialog.load(ram_available=64 * GIB))
    cat = dialog.catalogue
    moe = cat.verdicts[cat.entries[row_of(dialog, "30B-A3B")].repo_id]
    dense = cat.verdicts[cat.entries[row_of(dialog, "Qwen3 14B")].repo_id]
    assert moe.file.size_bytes > dense.file.size_bytes  # more RAM: the whole file ...
    assert moe.fit.ram_needed_bytes > dense.fit.ram_needed_bytes
    # ... but a token reads 3.3B of 30.5B parameters, so it decodes faster than the dense 14B.
    share = moe.entry.active_params_b / moe.entry.params_b
    assert moe.fit.expected_tok_s == pytest.approx(10 * GIB / (moe.file.size_bytes * share))
    assert moe.fit.expected_tok_s > 3 * dense.fit.expected_tok_s
    assert "of the weights" in moe.fit.note


def test_on_this_computer_lists_uses_and_deletes_a_model(
    dialog: ModelsDialog, models_dir: Path, run: Any, qtbot: Any
) -> None:
    path = write_tiny_gguf(models_dir / "tiny-llama-Q4_1.gguf")
    local = dialog.local
    models = run(local.refresh())
    assert [Path(m.path).name for m in models] == [path.name]
    cells = [local.table.item(0, c).text() for c in range(7)]
    assert cells[1:4] == ["Hearth", "llama", "Q4_1"] and cells[6] == "Never"
    listed = models[0].path  # as the engine names it (the app passes it back unchanged)
    assert Path(listed).resolve() == path.resolve()
    assert local.select_path(listed)
    with qtbot.waitSignal(dialog.sig_use_requested) as used:
        local.use_button.click()
    assert used.args == [listed]
    assert run(local.refresh())[0].last_used is not None  # "last used" is recorded
    local.select_path(listed)
    assert local.delete_button.isEnabled()
    local.delete_button.click()
    box = local.confirm_box
    assert box is not None and path.name in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert path.is_file()  # cancelled: nothing deleted
    local.delete_button.click()
    local.confirm_box.button(QMessageBox.StandardButton.Yes).click()
    assert not path.exists()
    assert local.table.rowCount() == 0 and run(local.refresh()) == []


def test_models_of_other_apps_are_offered_but_never_deleted(
    dialog: ModelsDialog, tmp_path: Path, run: Any
) -> None:
    lmstudio = tmp_path / "home" / ".lmstudio" / "models" / "someone" / "repo"
    lmstudio.mkdir(parents=True)
    path = write_tiny_gguf(lmstudio / "other-Q4_1.gguf")
    local = dialog.local
    (model,) = run(local.refresh())
    assert model.source == "lmstudio" and local.table.item(0, 1).text() == "LM Studio"
    local.select_path(model.path)
    assert local.use_button.isEnabled() and not local.delete_button.isEnabled()
    assert not local.delete_confirmed(model.path)  # the engine refuses too
    assert path.is_file() and "Not deleted" in local.status.text()


def test_hub_address_goes_to_settings_and_the_token_to_the_keyring_only(
    dialog: ModelsDialog, settings: Settings, keys: KeyStore, tmp_path: Path, loop: Any
) -> None:
    hub = dialog.hub
    hub.mirror_button.click()
    assert settings.hub_endpoint() == HUB_MIRROR_ENDPOINT
    assert dialog.access().endpoint == HUB_MIRROR_ENDPOINT
    hub.endpoint_edit.setText("hf-mirror.com")  # no scheme: refused, the old one stays
    assert not hub.on_save_endpoint_clicked()
    assert settings.hub_endpoint() == HUB_MIRROR_ENDPOINT and "http" in hub.note.text()
    hub.token_edit.setText(TOKEN)
    hub.save_token_button.click()
    assert hub.token_edit.text() == "" and keys.hub_token() == TOKEN
    assert dialog.access().token == TOKEN
    settings.sync()
    assert files_containing(tmp_path, TOKEN) == []
    hub.forget_token_button.click()
    assert keys.hub_token() is None and dialog.access().token is None
    hub.default_button.click()
    assert settings.hub_endpoint() in ("https://huggingface.co", _env_endpoint())


def _answer(hub_tab: Any, button: QMessageBox.StandardButton) -> None:
    box = hub_tab.token_host_box
    assert box is not None, "the question was not asked"
    box.button(button).click()
    assert hub_tab.token_host_box is None


def test_the_token_goes_to_a_mirror_only_once_the_user_said_yes_for_it(
    dialog: ModelsDialog, settings: Settings, keys: KeyStore, hub: Any, run: Any
) -> None:
    """Asked once per mirror, remembered; the answer decides whether the Authorization header
    reaches the mirror (a real server on 127.0.0.1) when the window lists a repo."""
    from app.hub.hub_calls import repo_files
    from tests.engine.support.fake_hub import FakeHub

    hub.add("someone/Tiny-GGUF", "tiny-Q8_0.gguf", b"x")
    tab = dialog.hub
    tab.endpoint_edit.setText(hub.endpoint)
    tab.on_save_endpoint_clicked()
    assert tab.token_host_box is None  # no token yet: nothing to ask
    tab.token_edit.setText(TOKEN)
    tab.save_token_button.click()
    _answer(tab, QMessageBox.StandardButton.Yes)
    assert dialog.access().token_hosts == {hub.endpoint}
    run(repo_files("someone/Tiny-GGUF", dialog.access()))
    assert hub.requests and all(r.authorization for r in hub.requests)
    tab.token_edit.setText(TOKEN)
    tab.save_token_button.click()
    assert tab.token_host_box is None  # answered once: not asked again
    with FakeHub() as other:
        other.add("someone/Tiny-GGUF", "tiny-Q8_0.gguf", b"x")
        tab.endpoint_edit.setText(other.endpoint)
        tab.on_save_endpoint_clicked()
        _answer(tab, QMessageBox.StandardButton.No)
        run(repo_files("someone/Tiny-GGUF", dialog.access()))
        assert other.requests and not any(r.authorization for r in other.requests)
    assert settings.token_host_answers() == {hub.endpoint: True, other.endpoint: False}


def _env_endpoint() -> str:
    import os

    return os.environ.get("HF_ENDPOINT", "").rstrip("/")


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Any:
    import huggingface_hub.constants

    from tests.engine.support.fake_hub import FakeHub

    # tests/conftest.py keeps huggingface_hub offline; this server is on loopback.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with FakeHub() as fake:
        yield fake


def test_catalogue_verdicts_come_from_the_hubs_file_lists(
    dialog: ModelsDialog, settings: Settings, hub: Any, run: Any
) -> None:
    from app.hub.hub_calls import catalogue

    entries = run(catalogue())
    small = next(e for e in entries if "0.8B" in e.name)
    big = next(e for e in entries if "14B" in e.name)
    mb = 2**20
    for name, size in (("Q4_K_M", 491 * mb), ("Q8_0", 676 * mb), ("F16", 1270 * mb)):
        hub.add(small.repo_id, f"small-{name.lower()}.gguf", b"x", advertised_size=size)
    # unsloth's dynamic quant under the same tag, larger: the plain Q8_0 is still the pick.
    hub.add(small.repo_id, "small-UD-Q8_0.gguf", b"x", advertised_size=700 * mb)
    for name, size in (("Q4_K_M", 9000 * mb), ("Q8_0", 15700 * mb)):
        hub.add(big.repo_id, f"big-{name}.gguf", b"x", advertised_size=size)
    settings.set_hub_endpoint(hub.endpoint)
    run(dialog.load(ram_available=8 * GIB))
    cat = dialog.catalogue
    assert not cat.offline
    s, b = cat.entries.index(small), cat.entries.index(big)
    assert cat.verdict_of(s) == "Fits"
    assert cat.table.item(s, 5).text() == "Q8_0 · 676.0 MB"  # the best quant that fits
    assert cat.verdict_of(b) == "Won't fit"
    assert cat.table.item(b, 5).text().startswith(big.default_quant)
    assert "tok/s" in cat.table.item(s, 4).text()
    others = [r for r in range(len(cat.entries)) if r not in (s, b)]
    assert all(cat.verdict_of(r) == "Unavailable" for r in others)  # unknown to this Hub
    button = cat.download_button(s)
    opened: list[Any] = []
    cat.sig_download_requested.disconnect()  # not the real download dialog here
    cat.sig_download_requested.connect(lambda f, projector: opened.append((f, projector)))
    button.click()
    assert [(f.filename, p) for f, p in opened] == [("small-q8_0.gguf", None)]  # none listed


def test_search_lists_files_and_reads_a_header_for_the_verdict(
    dialog: ModelsDialog, settings: Settings, hub: Any, run: Any, tmp_path: Path
) -> None:
    data = write_tiny_gguf(tmp_path / "t.gguf").read_bytes()
    hub.add("someone/Tiny-GGUF", "tiny-Q4_1.gguf", data + b"\0" * (2 * 2**20))
    hub.add("someone/Other-Model", "other-Q8_0.gguf", b"x")
    settings.set_hub_endpoint(hub.endpoint)
    search = dialog.search
    hits = run(search.search("tiny"))
    assert [h.repo_id for h in hits] == ["someone/Tiny-GGUF"]
    repo = search.tree.topLevelItem(0)
    files = run(search.list_files(repo))
    assert [f.filename for f in files] == ["tiny-Q4_1.gguf"]
    assert run(search.list_files(repo)) == [] and repo.childCount() == 1  # listed once
    item = repo.child(0)
    assert item.text(2) == "2.1 MB" and item.text(3) == "Fits (from size)"
    fit = run(search.check_file(item))
    assert fit.verdict == "fits" and item.text(3) == "Fits" and item.text(5) == "Yes"
    assert "llama" in search.status.text()
    # The header was read by range requests, not by downloading the file.
    ranges = hub.ranges("tiny-Q4_1.gguf")
    assert ranges and all(r is not None and re.fullmatch(r"bytes=\d+-\d+", r) for r in ranges)
    asked = sum(
        int(b) - int(a) + 1 for a, b in (r.removeprefix("bytes=").split("-") for r in ranges)
    )
    assert asked < 0.1 * (len(data) + 2 * 2**20)  # under 10% of the file
    assert run(search.search("no-such-model")) == []


def test_use_in_the_models_window_loads_the_model_in_the_app(
    qapp: Any, run: Any, keys: KeyStore, models_dir: Path, tmp_path: Path
) -> None:
    from app.application import Application
    from bench.synth.core import write_tiny_model

    path = (models_dir / "tiny-llama-Q8_0.gguf").resolve()
    write_tiny_model(path, "llama", "Q8_0")  # random weights, the bundled tokenizer: it chats
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_hub_endpoint(closed_port_url())
    hearth = Application(qapp, settings)
    hearth.window.show()
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    hearth.window.models_action.trigger()
    dialog = hearth._models_dialog
    assert isinstance(dialog, ModelsDialog) and dialog.isVisible()

    async def use_it() -> None:
        await until(lambda: bool(dialog.local.models and dialog.catalogue.verdicts))
        assert dialog.local.select_path(dialog.local.models[0].path)
        dialog.local.use_button.click()
        await until(lambda: hearth.session.model_info is not None and not hearth.session.busy)

    run(use_it())
    assert not dialog.isVisible()
    assert hearth.session.model_info is not None
    assert Path(hearth.session.model_info.source).resolve() == path
    assert Path(settings.recent_models()[0]).resolve() == path
    hearth.window.models_action.trigger()  # the same window comes back, its lists refreshed
    assert hearth._models_dialog is dialog
    run(dialog.load_task)
    assert Path(dialog.local.models[0].path).resolve() == path
    assert dialog.local.models[0].last_used
    run(hearth.shutdown())


def test_hub_address_comes_from_the_app_then_hf_endpoint_then_the_default(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert settings.hub_endpoint() == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example/")
    assert settings.hub_endpoint() == "https://mirror.example"
    assert settings.saved_hub_endpoint() == ""
    settings.set_hub_endpoint(HUB_MIRROR_ENDPOINT + "/")
    assert settings.hub_endpoint() == HUB_MIRROR_ENDPOINT
    with pytest.raises(ValueError, match="http"):
        settings.set_hub_endpoint("ftp://example")
    settings.set_hub_endpoint("")
    assert settings.hub_endpoint() == "https://mirror.example"


def test_catalogue_rows_grow_to_show_all_their_wrapped_text(
    dialog: ModelsDialog, run: Any, settings: Settings, qtbot: Any
) -> None:
    settings.set_hub_endpoint(closed_port_url())
    dialog.resize(900, 700)  # a narrow window: descriptions and licences wrap
    run(dialog.load(ram_available=8 * GIB))
    dialog.show()
    table = dialog.catalogue.table

    def every_row_fits() -> bool:
        width = table.columnWidth(0)
        return all(
            table.rowHeight(r) >= table.cellWidget(r, 0).heightForWidth(width)
            for r in range(table.rowCount())
        )

    qtbot.waitUntil(every_row_fits)
    narrow = max(table.rowHeight(r) for r in range(table.rowCount()))
    dialog.resize(1600, 700)  # wider: the rows shrink to fewer lines, and still fit
    qtbot.waitUntil(lambda: max(table.rowHeight(r) for r in range(table.rowCount())) < narrow)
    assert every_row_fits()


def test_hub_search_with_no_connection_fails_at_once_in_plain_words(
    dialog: ModelsDialog, settings: Settings, run: Any
) -> None:
    """Issue 22 B: offline, the search sat on "Searching the Hub…" for 15+ s (five retries
    of a failed name lookup), then showed a raw "[Errno -2]" and the advice twice."""
    settings.set_hub_endpoint("https://hub.invalid")  # .invalid never resolves (RFC 2606)
    search = dialog.search
    hits = run(search.search("qwen"))
    assert hits == []
    text = search.status.text()
    assert "cannot be reached" in text
    assert "Errno" not in text and text.count("set a mirror") == 1


def test_on_this_computer_lists_the_loaded_model_and_downloads_by_file_name(
    qapp: Any, run: Any, keys: KeyStore, models_dir: Path, tmp_path: Path
) -> None:
    """Issue 22 B: "No models yet" while a model from elsewhere ran, and downloads listed under
    the file's raw general.name instead of the file the user chose."""
    from app.application import Application
    from bench.synth.core import write_tiny_model

    elsewhere = tmp_path / "elsewhere" / "opened-from-disk-Q8_0.gguf"
    elsewhere.parent.mkdir()
    write_tiny_model(elsewhere, "llama", "Q8_0")
    downloaded = models_dir / "Chosen-Repo-File-Q8_0.gguf"
    write_tiny_model(downloaded, "llama", "Q8_0")
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_hub_endpoint(closed_port_url())
    hearth = Application(qapp, settings)
    hearth.window.show()
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    run(hearth.load(str(elsewhere)))
    assert hearth.session.model_info is not None
    hearth.window.models_action.trigger()
    dialog = hearth._models_dialog
    run(dialog.load_task)
    table = dialog.local.table
    rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    assert rows.get("Chosen-Repo-File-Q8_0") == "Hearth"
    [loaded] = [m for m in dialog.local.models if m.source == "in use"]
    assert Path(loaded.path).resolve() == elsewhere.resolve()
    assert rows[elsewhere.stem] == "Loaded now"
    assert "No models yet" not in dialog.local.status.text()
    run(hearth.shutdown())
