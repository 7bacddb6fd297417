"""Start-up with a database Hearth cannot open (issue 12, rows 5 and 10): real files, the real
`Application` and its real dialog offscreen, driven by clicking its buttons. Never a crash,
never a deleted or modified file."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QPushButton

from app.application import Application
from app.system.settings import Settings
from app.views.dialogs.store_problem import StoreProblemDialog

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 30  # a safety net only: the dialog appears as soon as the store fails to open


async def _dialog() -> StoreProblemDialog:
    for _ in range(int(WAIT_S / 0.01)):
        shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, StoreProblemDialog)]
        if shown and shown[0].isVisible():
            return shown[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no store problem dialog appeared")


async def _start_and_click(hearth: Application, db: Path, *buttons: str) -> tuple[bool, list[str]]:
    """Start the app on ``db`` and click ``buttons`` in the dialogs that appear, in order."""
    start = asyncio.ensure_future(hearth.start(db_path=db, model=None))
    texts = []
    for name in buttons:
        dialog = await _dialog()
        texts.append(dialog.text)
        dialog.findChild(QPushButton, name).click()
        await asyncio.sleep(0)
    return await start, texts


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path) -> Any:
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    yield app
    app.session.bridge.detach()
    run(app.shutdown())


def test_a_garbage_database_gets_a_dialog_and_start_fresh_keeps_the_old_file(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    db = tmp_path / "hearth.sqlite3"
    garbage = b"not a database, a half-written download \x00\xff" * 500
    db.write_bytes(garbage)
    started, [text] = run(_start_and_click(hearth, db, "storeStartFresh"))
    assert started and "damaged or is not a Hearth database" in text
    [aside] = tmp_path.glob("hearth.sqlite3.aside-*")
    assert aside.read_bytes() == garbage  # moved, never deleted
    run(hearth.session.refresh_conversations())
    assert hearth.session.conversations.rowCount() == 0
    with sqlite3.connect(db) as conn:  # a fresh, working database took its place
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_database_from_a_newer_hearth_is_explained_and_left_byte_for_byte(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    db = tmp_path / "hearth.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE from_the_future (x)")
    conn.execute("PRAGMA user_version = 42")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    started, [text] = run(_start_and_click(hearth, db, "storeQuit"))
    assert not started and "saved by a newer version of Hearth" in text
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if "sqlite" in p.name) == [db.name]


def test_try_again_opens_once_the_problem_is_gone(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    db = tmp_path / "hearth.sqlite3"
    db.write_bytes(b"garbage" * 100)

    async def fix_then_retry() -> tuple[bool, list[str]]:
        start = asyncio.ensure_future(hearth.start(db_path=db, model=None))
        dialog = await _dialog()
        db.unlink()  # the user repaired it by hand
        dialog.findChild(QPushButton, "storeRetry").click()
        return await start, []

    started, _ = run(fix_then_retry())
    assert started and db.exists() and not list(tmp_path.glob("*.aside-*"))


# -- a read-only data folder, for real ---------------------------------------------------------
# Root ignores permissions, so as root the child runs without CAP_DAC_OVERRIDE (setpriv).

_CHILD = r"""
import asyncio, json, os, sys
from pathlib import Path
import qasync
from PySide6.QtWidgets import QApplication, QPushButton
from app.application import Application
from app.system import crashlog
from app.system.settings import Settings
from tests.app.test_startup_db_problems import _dialog

data = Path(sys.argv[1])
qapp = QApplication([])
loop = qasync.QEventLoop(qapp)
asyncio.set_event_loop(loop)
out = {"log_dir": str(crashlog.install(data / "logs"))}
hearth = Application(qapp, Settings(sys.argv[2]))

async def main():
    start = asyncio.ensure_future(hearth.start(db_path=data / "hearth.sqlite3", model=None))
    dialog = await _dialog()
    out["text"] = dialog.text
    dialog.findChild(QPushButton, "storeStartFresh").click()  # cannot rename in this folder
    await asyncio.sleep(0)
    out["after_fresh"] = dialog.text
    out["still_open"] = dialog.isVisible()
    dialog.findChild(QPushButton, "storeQuit").click()
    out["started"] = await start
    await hearth.shutdown()

with loop:
    loop.run_until_complete(main())
print(json.dumps(out))
"""


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be taken away")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_a_read_only_data_folder_gets_the_dialog_and_the_crash_log_goes_elsewhere(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "hearth.sqlite3")  # a good database; WAL needs a -shm file
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()  # which removes -wal and -shm
    before = (data / "hearth.sqlite3").read_bytes()
    data.chmod(0o500)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run(
            [*_unprivileged(), sys.executable, "-c", _CHILD, str(data), str(tmp_path / "s.ini")],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        data.chmod(0o700)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["log_dir"] != str(data / "logs") and out["log_dir"] != "None"
    assert "folder cannot be written" in out["text"]
    assert out["after_fresh"].startswith("The file could not be moved aside")
    assert out["still_open"] and out["started"] is False
    assert (data / "hearth.sqlite3").read_bytes() == before


def test_a_database_with_damaged_pages_gets_the_dialog_and_is_moved_aside_whole(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    from app.store import Store

    db = tmp_path / "hearth.sqlite3"
    with Store(db) as store:
        for n in range(40):
            conv = store.create_conversation(f"chat {n}")
            store.add_message(conv.id, None, "user", "hello " * 200)
    data = bytearray(db.read_bytes())  # closed: every page is in the main file
    for offset in range(4096, len(data), 3 * 4096):  # every third page overwritten
        data[offset : offset + 4096] = b"\xde\xad\xbe\xef" * 1024
    db.write_bytes(bytes(data))
    started, [text] = run(_start_and_click(hearth, db, "storeStartFresh"))
    assert started and "damaged" in text
    [aside] = tmp_path.glob("hearth.sqlite3.aside-*")
    assert aside.read_bytes() == bytes(data)
    assert hearth.session.conversations.rowCount() == 0
