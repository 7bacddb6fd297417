"""Launching the menu entry's Exec command under a virtual X display shows the Hearth window;
a second launch focuses it instead of opening another; SIGTERM quits cleanly (exit code 0).

Needs Xvfb and xdotool (skips cleanly without them, or when Qt's xcb plugin cannot load).
Bounds are generous (60 s): this checks behaviour, not speed — see packaging/README.md for the
measured time to window.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WINDOW_BOUND_S = 60.0
XCB_FAILURE = "Could not load the Qt platform plugin"

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 test: Linux only"),
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb not installed"),
    pytest.mark.skipif(shutil.which("xdotool") is None, reason="xdotool not installed"),
    pytest.mark.skipif(
        not (REPO / "app" / "__main__.py").exists(), reason="app/__main__.py not written yet"
    ),
]


def _install_desktop_module():  # type: ignore[no-untyped-def]
    path = REPO / "packaging" / "linux" / "install_desktop.py"
    spec = importlib.util.spec_from_file_location("install_desktop", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("install_desktop", module)
    spec.loader.exec_module(module)
    return module


def _entry_command() -> tuple[list[str], Path]:
    """(argv, cwd) parsed back out of the rendered .desktop text, as a launcher would."""
    install_desktop = _install_desktop_module()
    command, workdir = install_desktop.launch_command(None)
    text = install_desktop.render_desktop(command, workdir)
    keys = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    # Undo the string-level escaping, then split per the Exec quoting rules (shlex-compatible
    # for what render_desktop writes).
    exec_value = keys["Exec"].replace("\\\\", "\\").replace("%%", "%")
    return shlex.split(exec_value), Path(keys["Path"])


@pytest.fixture
def display() -> Iterator[str]:
    """A fresh Xvfb; ``-displayfd`` lets the server pick a free display number."""
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    if not number:
        server.kill()
        server.wait()
        pytest.skip("Xvfb could not start")
    try:
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _x(display: str, *args: str) -> str:
    result = subprocess.run(
        list(args), capture_output=True, text=True, env=dict(os.environ, DISPLAY=display)
    )
    return result.stdout.strip()


def _hearth_windows(display: str) -> list[str]:
    return _x(display, "xdotool", "search", "--onlyvisible", "--name", "Hearth").split()


def _wait_for_window(display: str, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + WINDOW_BOUND_S
    while time.monotonic() < deadline:
        windows = _hearth_windows(display)
        if windows:
            return windows[0]
        if proc.poll() is not None:
            _out, err = proc.communicate()
            if XCB_FAILURE in err:
                pytest.skip(f"Qt's xcb platform plugin cannot load here: {err.strip()[:300]}")
            pytest.fail(f"app exited with {proc.returncode} before showing a window:\n{err}")
        time.sleep(0.25)
    pytest.fail(f"no window titled 'Hearth' within {WINDOW_BOUND_S:.0f} s")


@pytest.mark.timeout(240)
def test_exec_command_shows_window_focuses_on_relaunch_and_quits_on_sigterm(
    display: str, tmp_path: Path
) -> None:
    argv, cwd = _entry_command()
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env |= {"DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "HEARTH_DATA_DIR": str(tmp_path)}
    # QSettings live under XDG_CONFIG_HOME: keep the user's real window/model settings untouched.
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    first = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        window = _wait_for_window(display, first)
        assert "Hearth" in _x(display, "xdotool", "getwindowname", window)
        # The class is what the menu entry's StartupWMClass must match.
        assert '"Hearth"' in _x(display, "xprop", "-id", window, "WM_CLASS")

        second = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=90)
        assert second.returncode == 0, second.stderr
        assert first.poll() is None, "the first instance must keep running"
        assert len(_hearth_windows(display)) == 1, "a second launch must not open a window"

        first.send_signal(signal.SIGTERM)
        code = first.wait(timeout=60)
        _out, err = first.communicate()
        assert code == 0, f"SIGTERM must end the app like closing its window:\n{err[-2000:]}"
        # It leaves at once after saving (os._exit), yet as a normal end: no fatal-error file
        # stays behind for the next start to report as a crash.
        assert not list(tmp_path.rglob("fatal-*.log"))
        assert list(tmp_path.rglob("*.sqlite3")), "the store was created and closed"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
