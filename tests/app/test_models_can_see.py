"""The Models window and models that can see (issue 31 item 6), on real widgets offscreen and a
Hub-like server on 127.0.0.1: a catalogue entry that reads images offers its projector with it
and the download brings both, verified, into the models folder; Hub search lists a repo's
projectors apart from its models and offers "Download with its projector…"; On this computer
says "can see" on a model paired with its projector (Hearth's folder and LM Studio's layout),
never listing the projector itself. Screenshots go to /tmp/hearth/shots when that folder exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.system.settings import Settings
from app.views.models.dialog import ModelsDialog
from app.views.models.download_dialog import Phase
from tests.app.test_models_dialog import GIB, hub, keys, models_dir, settings, until  # noqa: F401
from tests.engine.hub.test_hub_projectors import tiny, write_clip
from tests.engine.support.tiny_gguf import write_tiny_gguf

SHOTS = Path("/tmp/hearth/shots")
QWEN = "unsloth/Qwen3.5-0.8B-GGUF"


def shoot(widget: Any, name: str) -> None:
    if SHOTS.is_dir():
        widget.grab().save(str(SHOTS / name), "PNG")


@pytest.fixture
def dialog(qtbot: Any, settings: Settings, keys: Any, models_dir: Path) -> ModelsDialog:  # noqa: F811
    widget = ModelsDialog(settings, keys, dest_dir=models_dir)
    widget.resize(1280, 900)
    qtbot.addWidget(widget)
    return widget


@pytest.fixture
def seeing_repo(hub: Any, tmp_path: Path) -> Any:  # noqa: F811
    model = write_tiny_gguf(tmp_path / "src-model.gguf").read_bytes()
    hub.add(QWEN, "Qwen3.5-0.8B-Q8_0.gguf", model)
    hub.add(QWEN, "mmproj-BF16.gguf", write_clip(tmp_path / "bf16.gguf", seed=2).read_bytes())
    hub.add(QWEN, "mmproj-F16.gguf", write_clip(tmp_path / "f16.gguf", seed=1).read_bytes())
    return hub


def test_the_catalogue_downloads_a_seeing_model_with_its_projector(
    dialog: ModelsDialog,
    settings: Settings,  # noqa: F811
    seeing_repo: Any,
    run: Any,
    models_dir: Path,  # noqa: F811
) -> None:
    settings.set_hub_endpoint(seeing_repo.endpoint)
    run(dialog.load(ram_available=8 * GIB))
    cat = dialog.catalogue
    row = next(i for i, e in enumerate(cat.entries) if e.repo_id == QWEN)
    verdict = cat.verdicts[QWEN]
    assert verdict.projector is not None and verdict.projector.filename == "mmproj-F16.gguf"
    assert "+ projector" in cat.table.item(row, 5).text()
    assert "mmproj-F16.gguf" in cat.table.item(row, 5).toolTip()
    assert "can see" in cat.table.cellWidget(row, 0).text()
    cat.table.selectRow(row)
    shoot(dialog, "models-catalogue-can-see.png")
    button = cat.download_button(row)
    assert button is not None and button.isEnabled()
    button.click()  # the real download dialog, the real engine download
    download = dialog.download_dialog
    assert download is not None and download.projector == verdict.projector
    assert "mmproj-F16.gguf" in download.projector_label.text()
    run(until(lambda: download.phase is Phase.DONE))
    assert "Its vision projector, verified too: mmproj-Qwen3.5-0.8B-F16.gguf" in (
        download.status.text()
    )
    shoot(download, "download-with-projector.png")
    assert sorted(p.name for p in models_dir.glob("*.gguf")) == [
        "Qwen3.5-0.8B-Q8_0.gguf",
        "mmproj-Qwen3.5-0.8B-F16.gguf",
    ]
    run(until(lambda: dialog.refresh_task is not None and dialog.refresh_task.done()))
    local = dialog.local
    assert [Path(m.path).name for m in local.models] == ["Qwen3.5-0.8B-Q8_0.gguf"]
    assert local.table.item(0, 7).text() == "can see"
    assert "mmproj-Qwen3.5-0.8B-F16.gguf" in local.table.item(0, 0).toolTip()
    dialog.tabs.setCurrentWidget(local)
    local.table.selectRow(0)
    shoot(dialog, "models-on-this-computer-can-see.png")
    assert local.delete_confirmed(local.models[0].path)  # the projector was only its own
    assert "and its vision projector mmproj-Qwen3.5-0.8B-F16.gguf" in local.status.text()
    assert list(models_dir.glob("*.gguf")) == []


def test_search_lists_projectors_apart_and_offers_the_pair(
    dialog: ModelsDialog,
    settings: Settings,  # noqa: F811
    seeing_repo: Any,
    run: Any,
) -> None:
    settings.set_hub_endpoint(seeing_repo.endpoint)
    search = dialog.search
    run(search.search("qwen3.5"))
    repo = search.tree.topLevelItem(0)
    files = run(search.list_files(repo))
    assert [f.filename for f in files] == ["Qwen3.5-0.8B-Q8_0.gguf"]  # models only
    model_row, group = repo.child(0), repo.child(1)
    assert group.text(0) == "Vision projectors (mmproj)" and group.childCount() == 2
    assert {group.child(i).text(0) for i in range(2)} == {"mmproj-F16.gguf", "mmproj-BF16.gguf"}
    requested: list[tuple[Any, Any]] = []
    search.sig_download_requested.disconnect()  # the requests, not the download dialog
    search.sig_download_requested.connect(lambda f, p: requested.append((f, p)))
    search.tree.setCurrentItem(model_row)
    run(until(lambda: "llama" in search.status.text()))  # the header read for the verdict
    assert search.pair_button.isVisibleTo(search) and search.download_button.isEnabled()
    dialog.tabs.setCurrentWidget(search)
    repo.setExpanded(True)  # listed already: expanding lists nothing again
    shoot(dialog, "search-projectors-apart.png")
    search.pair_button.click()
    search.download_button.click()
    (model, projector), (alone, nothing) = requested
    assert model.filename == alone.filename == "Qwen3.5-0.8B-Q8_0.gguf"
    assert projector.filename == "mmproj-F16.gguf" and nothing is None
    search.tree.setCurrentItem(group.child(0))  # a projector: downloadable, no header verdict
    run(until(lambda: "is a vision projector" in search.status.text()))
    assert not search.pair_button.isVisibleTo(search) and search.download_button.isEnabled()


def test_on_this_computer_pairs_lm_studio_projectors(
    dialog: ModelsDialog,
    tmp_path: Path,
    run: Any,
    models_dir: Path,  # noqa: F811
) -> None:
    lms = tmp_path / "home" / ".lmstudio" / "models" / "lmstudio-community" / "gemma-3-4b-it-GGUF"
    seeing = tiny(lms / "gemma-3-4b-it-Q4_K_M.gguf")
    write_clip(lms / "mmproj-model-f16.gguf")
    text_only = tiny(models_dir / "SmolLM2-Q8_0.gguf", seed=2)
    models = run(dialog.local.refresh())
    names = {Path(m.path).name: row for row, m in enumerate(models)}
    assert set(names) == {seeing.name, text_only.name}  # the projector is no row of its own
    table = dialog.local.table
    assert table.item(names[seeing.name], 7).text() == "can see"
    assert table.item(names[text_only.name], 7).text() == ""
    assert json.dumps([m.to_dict() for m in models])  # mmproj travels with the record


def test_resuming_a_seeing_models_download_fetches_its_projector_after_it(
    dialog: ModelsDialog,
    settings: Settings,  # noqa: F811
    seeing_repo: Any,
    run: Any,
    models_dir: Path,  # noqa: F811
) -> None:
    settings.set_hub_endpoint(seeing_repo.endpoint)
    run(dialog.load(ram_available=8 * GIB))
    verdict = dialog.catalogue.verdicts[QWEN]
    resumed = dialog.resume_download(verdict.file, 0)  # as the "Unfinished download" row does
    assert resumed.projector == verdict.projector
    run(until(lambda: resumed.phase is Phase.DONE))
    assert (models_dir / "mmproj-Qwen3.5-0.8B-F16.gguf").is_file()
