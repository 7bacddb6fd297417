"""Crash logs written by real subprocesses: uncaught exceptions, thread exceptions, segfaults."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.system import crashlog

REPO = Path(__file__).resolve().parents[2]


def _run(code: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    script = "from pathlib import Path\nfrom app.system import crashlog\n"
    script += f"crashlog.install(Path({str(log_dir)!r}))\n" + textwrap.dedent(code)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )


def test_uncaught_exception_writes_a_log_and_keeps_default_output(tmp_path: Path) -> None:
    result = _run("raise RuntimeError('boom from the test')", tmp_path)
    assert result.returncode == 1
    assert "boom from the test" in result.stderr  # the default hook still ran
    log = crashlog.pending_crash_log(tmp_path)
    assert log is not None
    text = log.read_text(encoding="utf-8")
    assert "RuntimeError: boom from the test" in text
    assert "Python:" in text and "Platform:" in text
    # The process ended, so its fatal-<pid>.log was removed at exit.
    assert not list(tmp_path.glob("fatal-*.log"))


def test_thread_exception_is_logged(tmp_path: Path) -> None:
    code = """
    import threading
    def work():
        raise ValueError('bad in worker')
    t = threading.Thread(target=work, name='engine-worker')
    t.start(); t.join()
    """
    assert _run(code, tmp_path).returncode == 0
    log = crashlog.pending_crash_log(tmp_path)
    assert log is not None
    text = log.read_text(encoding="utf-8")
    assert "ValueError: bad in worker" in text and "engine-worker" in text


def test_clean_exit_leaves_nothing_pending(tmp_path: Path) -> None:
    assert _run("print('fine')", tmp_path).returncode == 0
    assert crashlog.pending_crash_log(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_hard_crash_is_adopted_at_next_install(tmp_path: Path) -> None:
    result = _run("import faulthandler; faulthandler._sigsegv()", tmp_path)
    assert result.returncode != 0
    assert crashlog.pending_crash_log(tmp_path) is None  # not adopted until the next start
    assert _run("pass", tmp_path).returncode == 0
    log = crashlog.pending_crash_log(tmp_path)
    assert log is not None
    assert "Segmentation fault" in log.read_text(encoding="utf-8")


def test_acknowledge_hides_the_log_and_older_ones_stay_hidden(tmp_path: Path) -> None:
    _run("raise KeyError('first')", tmp_path)
    first = crashlog.pending_crash_log(tmp_path)
    assert first is not None
    crashlog.acknowledge(first)
    assert crashlog.pending_crash_log(tmp_path) is None
    assert first.exists()  # acknowledged, not deleted


def test_missing_dir_has_no_pending_log(tmp_path: Path) -> None:
    assert crashlog.pending_crash_log(tmp_path / "nope") is None


@pytest.mark.usefixtures("qapp")
def test_crash_dialog_shows_the_log_and_acknowledges_on_dismiss(tmp_path: Path) -> None:
    from app.views.dialogs.crash import CrashDialog

    log = crashlog.write_crash_log(tmp_path, RuntimeError("shown in dialog"))
    dialog = CrashDialog(log)
    assert "shown in dialog" in dialog.log_text
    dialog.on_copy_clicked()
    from PySide6.QtGui import QGuiApplication

    assert "shown in dialog" in QGuiApplication.clipboard().text()
    dialog.accept()
    assert crashlog.pending_crash_log(tmp_path) is None


def _unprivileged() -> list[str]:
    """Root ignores folder permissions: as root, run the child without CAP_DAC_OVERRIDE."""
    import shutil

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be taken away")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_an_unwritable_log_folder_never_stops_the_start(tmp_path: Path) -> None:
    logs, temp = tmp_path / "logs", tmp_path / "temp"
    logs.mkdir()
    temp.mkdir()
    logs.chmod(0o500)
    script = (
        "from pathlib import Path\nfrom app.system import crashlog\n"
        f"print(crashlog.install(Path({str(logs)!r})), flush=True)\n"
        "raise RuntimeError('boom with a read-only log folder')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(temp))
    try:
        result = subprocess.run(
            [*_unprivileged(), sys.executable, "-c", script],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
    finally:
        logs.chmod(0o700)
    assert result.returncode == 1 and "boom with a read-only log folder" in result.stderr
    assert "Traceback" in result.stderr and "crashlog.py" not in result.stderr
    assert list(logs.iterdir()) == []
    used = result.stdout.strip()  # the per-user fallback under the temporary folder
    assert used == str(temp / f"hearth-logs-{os.getuid()}")
    log = crashlog.pending_crash_log(Path(used))
    assert log is not None and "boom with a read-only" in log.read_text(encoding="utf-8")
