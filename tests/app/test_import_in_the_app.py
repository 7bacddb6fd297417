"""Issue 12, row 1, through the window: the file whose stats say ``"ttft_s": "x"`` (which used
to be stored and then crash every open of the chat) is refused with the error dialog's text,
and nothing is added; a good file with a newer Hearth's extra statistics opens and paints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.application import Application
from app.portability.portable import ImportFormatError
from app.system.settings import Settings
from app.views.dialogs.common import friendly_error


def _file(tmp_path: Path, stats: dict[str, Any]) -> Path:
    node = {"id": "1", "parent": None, "role": "user", "content": "hi"}
    reply = {"id": "2", "parent": "1", "role": "assistant", "content": "**hello**", "stats": stats}
    doc = {"format": "hearth.conversation", "version": 1, "title": "imported",
           "tree": {"active_root": "1", "nodes": [node, reply]}}  # fmt: skip
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path) -> Any:
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    app.window.resize(900, 700)
    app.window.show()
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    yield app
    app.session.bridge.detach()
    run(app.shutdown())


def test_a_file_with_text_where_a_statistic_belongs_is_refused_in_the_app(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    errors: list[BaseException] = []
    hearth.session.sig_error.connect(errors.append)
    run(hearth.session.reporting(hearth.import_files([_file(tmp_path, {"ttft_s": "x"})])))
    [error] = errors
    assert isinstance(error, ImportFormatError)
    headline, detail = friendly_error(error) or ("", "")
    assert headline == "This file cannot be imported."
    assert "tree.nodes[1].stats.ttft_s must be a number" in detail
    assert hearth.session.conversations.rowCount() == 0


def test_a_good_file_with_unknown_statistics_opens_and_paints(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    stats = {"ttft_s": 0.5, "completion_tokens": 2, "accelerator": "H200"}
    run(hearth.import_files([_file(tmp_path, stats)]))
    assert hearth.session.conversations.rowCount() == 1
    assert [m.record.content for m in hearth.session.messages.items()] == ["hi", "**hello**"]
    assert not hearth.window.grab().isNull()  # a paint of the opened chat
