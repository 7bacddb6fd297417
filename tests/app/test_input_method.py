"""Input methods on Linux: the framework is detected, Qt gets a plugin that reaches it, or the
user gets the command that fixes it. Real folders stand in for plugin locations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.system.input_method import (
    IBUS_PLUGIN,
    detect_framework,
    prepare_input_method,
    qt_plugin_dir,
    running_processes,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
FCITX = "libfcitx5platforminputcontextplugin.so"


def _plugins(root: Path, *names: str) -> Path:
    folder = root / "platforminputcontexts"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"\x7fELF")
    return root


def test_pyside6_ships_the_ibus_plugin_but_not_fcitx5s() -> None:
    contexts = qt_plugin_dir() / "platforminputcontexts"
    assert (contexts / IBUS_PLUGIN).is_file()  # what the ibus and fallback paths rely on


def test_framework_comes_from_the_session_then_from_running_daemons() -> None:
    assert detect_framework({"XMODIFIERS": "@im=fcitx"}, []) == "fcitx"
    assert detect_framework({"GTK_IM_MODULE": "ibus"}, ["fcitx5"]) == "ibus"
    assert detect_framework({}, ["bash", "fcitx5"]) == "fcitx"
    assert detect_framework({}, ["ibus-daemon"]) == "ibus"
    assert detect_framework({}, ["bash"]) is None


def test_running_processes_reads_proc() -> None:
    assert "python" in " ".join(running_processes())  # this test's own process is there


def test_ibus_uses_the_shipped_plugin(tmp_path: Path) -> None:
    env = {"XMODIFIERS": "@im=ibus"}
    status = prepare_input_method(env, running=[], own_plugins=_plugins(tmp_path, IBUS_PLUGIN))
    assert env["QT_IM_MODULE"] == "ibus" and status.advice is None


def test_fcitx5_uses_the_systems_qt6_plugin_when_installed(tmp_path: Path) -> None:
    own = _plugins(tmp_path / "own", IBUS_PLUGIN)
    system = _plugins(tmp_path / "system", FCITX)
    env = {"XMODIFIERS": "@im=fcitx", "QT_PLUGIN_PATH": "/already"}
    status = prepare_input_method(env, running=[], own_plugins=own, system_dirs=[str(system)])
    assert env["QT_IM_MODULE"] == "fcitx" and status.plugin_dir == str(system)
    assert env["QT_PLUGIN_PATH"].split(":") == ["/already", str(system)]


def test_fcitx5_falls_back_to_its_ibus_frontend(tmp_path: Path) -> None:
    own = _plugins(tmp_path / "own", IBUS_PLUGIN)
    frontend = tmp_path / "libibusfrontend.so"
    frontend.write_bytes(b"")
    env: dict[str, str] = {}
    status = prepare_input_method(
        env, running=["fcitx5"], own_plugins=own, system_dirs=[], ibus_frontends=[str(frontend)]
    )
    assert env["QT_IM_MODULE"] == "ibus" and status.framework == "fcitx" and not status.advice


def test_fcitx5_without_any_route_gets_the_install_command(tmp_path: Path) -> None:
    own = _plugins(tmp_path / "own", IBUS_PLUGIN)
    env = {"XMODIFIERS": "@im=fcitx"}
    status = prepare_input_method(
        env, running=[], own_plugins=own, system_dirs=[], ibus_frontends=[], package_manager="dnf"
    )
    assert status.advice == "sudo dnf install fcitx5-qt6" and "QT_IM_MODULE" not in env


def test_offscreen_and_no_input_method_change_nothing(tmp_path: Path) -> None:
    env = {"QT_QPA_PLATFORM": "offscreen", "XMODIFIERS": "@im=fcitx"}
    assert prepare_input_method(env, running=[]).advice is None and "QT_IM_MODULE" not in env
    env = {}
    status = prepare_input_method(env, running=[], own_plugins=_plugins(tmp_path, IBUS_PLUGIN))
    assert status.framework is None and env == {}


def test_the_notice_is_shown_once_with_the_command(qtbot: object, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QWidget

    from app.system.input_method import InputMethodStatus
    from app.system.settings import Settings
    from app.views.chat.input_method_notice import advise_input_method

    parent = QWidget()
    settings = Settings(str(tmp_path / "s.ini"))
    status = InputMethodStatus("fcitx", None, advice="sudo apt install fcitx5-frontend-qt6")
    box = advise_input_method(parent, status, settings)
    assert box is not None and box.isVisible()
    assert "sudo apt install fcitx5-frontend-qt6" in box.informativeText()
    box.close()
    assert advise_input_method(parent, status, Settings(str(tmp_path / "s.ini"))) is None
    assert advise_input_method(parent, InputMethodStatus("ibus", "ibus"), settings) is None
