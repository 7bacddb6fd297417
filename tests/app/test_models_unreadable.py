"""One hostile GGUF in the models folder or LM Studio's (issue 22 A4): the Models window lists
it as unreadable, with the reason in its tooltip and Use disabled, and still lists the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.views.models.local import LocalModelsTab
from tests.engine.support.hostile_gguf import F32, gguf_bytes, llama_kvs, scalar, write
from tests.engine.support.tiny_gguf import write_tiny_gguf


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_hostile_file_is_listed_as_unreadable_and_the_rest_still_shown(
    qtbot: Any, run: Any, home: Path, tmp_path: Path
) -> None:
    lmstudio = home / ".lmstudio" / "models" / "someone" / "repo"
    lmstudio.mkdir(parents=True)
    (tmp_path / "models").mkdir()
    good = write_tiny_gguf(tmp_path / "models" / "good-Q4_1.gguf")
    bad = gguf_bytes(llama_kvs(**{"general.alignment": scalar(F32, 0.5)}))
    write(lmstudio / "bad-Q4_0.gguf", bad)
    tab = LocalModelsTab()
    qtbot.addWidget(tab)
    models = run(tab.refresh())
    assert sorted(Path(m.path).name for m in models) == ["bad-Q4_0.gguf", good.name]
    rows = {tab.table.item(r, 0).text(): r for r in range(tab.table.rowCount())}
    bad_row = next(r for name, r in rows.items() if "bad" in name)
    assert tab.table.item(bad_row, 2).text() == "unreadable"
    assert "alignment" in tab.table.item(bad_row, 0).toolTip()
    tab.table.selectRow(bad_row)
    assert not tab.use_button.isEnabled()
    tab.table.selectRow(1 - bad_row)
    assert tab.use_button.isEnabled()
