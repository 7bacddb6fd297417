"""Single-instance behaviour across real processes: the second launch pokes the first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_instance_child.py")


def _spawn(key: str, mode: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), QT_QPA_PLATFORM="offscreen")
    return subprocess.Popen(
        [sys.executable, str(CHILD), key, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def _poke(key: str) -> str:
    proc = _spawn(key, "poke")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.strip()


@pytest.fixture
def key() -> str:
    return f"hearth-test-{uuid.uuid4().hex[:8]}"


@pytest.mark.timeout(120)
def test_second_launch_is_refused_and_activates_the_first(key: str) -> None:
    first = _spawn(key, "hold")
    try:
        assert _first_line(first) == "acquired"
        assert _poke(key) == "False"
        # The first instance prints "activated" and exits on the poke.
        assert _first_line(first) == "activated"
        assert first.wait(timeout=30) == 0
    finally:
        first.kill()
        first.wait()
    # Once the first instance is gone, a new launch becomes the instance.
    assert _poke(key) == "True"


@pytest.mark.timeout(120)
def test_stale_socket_and_lock_after_a_crash_are_taken_over(key: str) -> None:
    crashed = _spawn(key, "crash")
    try:
        assert _first_line(crashed) == "acquired"
    finally:
        crashed.send_signal(signal.SIGKILL)
        crashed.wait()
    # SIGKILL leaves the lock file and (on Unix) the socket file behind.
    assert _poke(key) == "True"


def test_key_differs_per_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from app.system.single_instance import server_name

    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "a"))
    a = server_name("hearth")
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "b"))
    assert server_name("hearth") != a
    assert a.startswith("hearth-")
