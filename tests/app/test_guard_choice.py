"""Guard models in the app (issue 33 item 1): the Models window's catalogue has a Safety section
listing the Qwen3Guard-Gen models apart from the chat models; one downloads (real HTTP on
127.0.0.1, sha256-verified) into the guards folder, never offered for chatting; Preferences →
Safety review then offers it by name, and the choice is its file. Real widgets, offscreen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.chat.safety_config import SafetyConfig
from app.system.settings import Settings
from app.views.dialogs.safety_options import SafetyBox
from app.views.models.dialog import ModelsDialog
from app.views.models.download_dialog import Phase
from engine.hub.guard_models import load_guard_models
from tests.app.test_models_can_see import shoot
from tests.app.test_models_dialog import GIB, hub, keys, models_dir, settings, until  # noqa: F401
from tests.engine.support.tiny_gguf import write_tiny_gguf


@pytest.fixture
def dialog(qtbot: Any, settings: Settings, keys: Any, models_dir: Path) -> ModelsDialog:  # noqa: F811
    widget = ModelsDialog(settings, keys, dest_dir=models_dir)
    widget.resize(1280, 900)
    qtbot.addWidget(widget)
    return widget


def test_a_guard_downloads_from_the_safety_section_and_preferences_offer_it(
    dialog: ModelsDialog,
    settings: Settings,  # noqa: F811
    hub: Any,  # noqa: F811
    run: Any,
    qtbot: Any,
    models_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    small, _large = load_guard_models()
    data = write_tiny_gguf(tmp_path / "guard.gguf", arch="qwen3").read_bytes()
    hub.add(small.repo_id, small.filename, data)
    settings.set_hub_endpoint(hub.endpoint)
    run(dialog.load(ram_available=8 * GIB))
    section = dialog.catalogue.guards
    assert [g.name for g in section.guards] == ["Qwen3Guard-Gen 0.6B", "Qwen3Guard-Gen 4B"]
    assert not {g.repo_id for g in section.guards} & {e.repo_id for e in dialog.catalogue.entries}
    assert [b.text() for b in section.buttons] == ["Download…", "Download…"]
    before = SafetyBox(SafetyConfig())
    qtbot.addWidget(before)
    assert before.guard_model.count() == 0  # nothing downloaded yet: type a path or a name
    section.buttons[0].click()
    download = dialog.download_dialog
    assert download is not None and not download.chat_model
    run(until(lambda: download.phase is Phase.DONE))
    assert not download.use_button.isVisibleTo(download)  # a guard is no chat model
    path = models_dir / "guards" / small.filename
    assert path.read_bytes() == data
    run(until(lambda: dialog.refresh_task is not None and dialog.refresh_task.done()))
    assert [b.text() for b in section.buttons] == ["Downloaded", "Download…"]
    assert dialog.local.models == []  # not listed with the chat models
    shoot(dialog, "models-safety-section.png")

    box = SafetyBox(SafetyConfig(enabled=True))
    qtbot.addWidget(box)
    assert [box.guard_model.itemText(i) for i in range(box.guard_model.count())] == [small.name]
    box.guard_model.setCurrentIndex(0)
    assert box.config().guard_model == str(path)  # the choice is the file
    shoot(box, "preferences-safety-guard-choice.png")
    reopened = SafetyBox(SafetyConfig(enabled=True, guard_model=str(path)))
    qtbot.addWidget(reopened)
    assert reopened.guard_model.currentText() == small.name
    served = SafetyBox(SafetyConfig(guard_model="qwen3guard-gen-4b", guard_base_url="http://x/v1"))
    qtbot.addWidget(served)
    assert served.config().guard_model == "qwen3guard-gen-4b"  # typed: kept as it is
