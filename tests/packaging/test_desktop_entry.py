"""The Linux menu entry: it validates, installs for one user, and uninstalls without residue."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_script(path: Path) -> ModuleType:
    """Import a script that is not part of a package (packaging/ is build recipes only)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclass/typing lookups need the module registered
    spec.loader.exec_module(module)
    return module


install_desktop = _load_script(REPO / "packaging" / "linux" / "install_desktop.py")

needs_validator = pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None, reason="desktop-file-validate not installed"
)


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["desktop-file-validate", str(path)], capture_output=True, text=True, check=False
    )


@needs_validator
@pytest.mark.parametrize(
    "command",
    [
        [str(REPO / ".venv/bin/python"), "-m", "app"],
        ["/opt/My Apps/Hearth 100%/Hearth", "--flag=$HOME", 'say "hi"\\now'],
    ],
)
def test_rendered_entry_validates(tmp_path: Path, command: list[str]) -> None:
    desktop = tmp_path / "hearth.desktop"
    desktop.write_text(install_desktop.render_desktop(command, tmp_path), encoding="utf-8")
    result = _validate(desktop)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in result.stdout


def test_exec_quoting_follows_the_spec() -> None:
    quote = install_desktop.quote_exec_arg
    assert quote("/usr/bin/python") == "/usr/bin/python"
    assert quote("/a b/python") == '"/a b/python"'
    assert quote('x"y$z') == '"x\\"y\\$z"'
    assert quote("100%") == "100%%"
    # String-level escaping then doubles every backslash of the quoted form.
    assert install_desktop.escape_string(quote("a\\b c")) == '"a\\\\\\\\b c"'


def test_entry_names_window_class_icon_and_translations(tmp_path: Path) -> None:
    text = install_desktop.render_desktop(["/x/python", "-m", "app"], tmp_path)
    keys = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert keys["Exec"] == "/x/python -m app"
    assert keys["Path"] == str(tmp_path)
    assert keys["Icon"] == "hearth"
    assert keys["StartupWMClass"] == "Hearth"  # the app name Qt puts in WM_CLASS
    assert keys["Terminal"] == "false"
    assert keys["Name[zh_CN]"] and keys["Comment[zh_CN]"]
    assert "@" not in text  # every placeholder was filled


def _run_installer(action: str, data_home: Path) -> subprocess.CompletedProcess[str]:
    script = REPO / "packaging" / "linux" / "install_desktop.py"
    env = dict(os.environ, XDG_DATA_HOME=str(data_home))
    return subprocess.run(
        [sys.executable, str(script), action], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.mark.skipif(not (REPO / ".venv/bin/python").exists(), reason="no project .venv")
def test_install_then_uninstall_leaves_no_files(tmp_path: Path) -> None:
    home = tmp_path / "share"
    result = _run_installer("install", home)
    assert result.returncode == 0, result.stderr
    installed = sorted(p for p in home.rglob("*") if p.is_file())
    assert sorted(install_desktop.planned_files(home)) == installed
    desktop = home / "applications" / "hearth.desktop"
    assert f"Exec={REPO}/.venv/bin/python -m app" in desktop.read_text(encoding="utf-8")
    png = home / "icons/hicolor/48x48/apps/hearth.png"
    assert png.read_bytes() == (REPO / "assets/icons/hearth-48.png").read_bytes()

    result = _run_installer("uninstall", home)
    assert result.returncode == 0, result.stderr
    assert [p for p in home.rglob("*") if p.is_file()] == []


def test_uninstall_keeps_someone_elses_entry(tmp_path: Path) -> None:
    home = tmp_path / "share"
    theirs = home / "applications" / "hearth.desktop"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("[Desktop Entry]\nType=Application\nName=Other\nExec=other\n")
    assert _run_installer("uninstall", home).returncode == 0
    assert theirs.exists()


def test_bundle_that_was_not_built_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(install_desktop.InstallError, match="make package"):
        install_desktop.launch_command(tmp_path / "nope")
