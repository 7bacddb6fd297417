"""The bare-machine check (issue 12): the xcb plugin's real NEEDED entries are read, a library
the system lacks is found, and the user gets the exact install command instead of a Qt abort.
Headless: a copy of the real plugin whose dependency was renamed to one that cannot exist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.system import qt_libs

QT = qt_libs.qt_dir()
pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or QT is None or not qt_libs.plugin_files(QT),
    reason="PySide6's xcb plugin exists on Linux only",
)
FAKE = "libxcb-cursoX.so.0"  # same length as the real soname it replaces


def fake_qt(tmp_path: Path) -> Path:
    """A Qt folder whose xcb plugin needs ``FAKE`` instead of libxcb-cursor.so.0."""
    assert QT is not None
    platforms = tmp_path / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    data = (QT / "plugins" / "platforms" / "libqxcb.so").read_bytes()
    assert b"libxcb-cursor.so.0\0" in data
    (platforms / "libqxcb.so").write_bytes(
        data.replace(b"libxcb-cursor.so.0\0", FAKE.encode() + b"\0")
    )
    lib = tmp_path / "Qt" / "lib"
    lib.mkdir()
    for bundled in (QT / "lib").iterdir():  # Qt's own libraries count by name only
        (lib / bundled.name).touch()
    shutil.copyfile(QT / "lib" / "libQt6XcbQpa.so.6", lib / "libQt6XcbQpa.so.6")
    return tmp_path / "Qt"


def test_the_plugins_needed_entries_are_read_from_the_elf_file() -> None:
    assert QT is not None
    needed, machine = qt_libs.elf_needed(QT / "plugins" / "platforms" / "libqxcb.so")
    assert "libQt6XcbQpa.so.6" in needed and machine in (62, 183)
    qpa, _ = qt_libs.elf_needed(QT / "lib" / "libQt6XcbQpa.so.6")
    assert {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"} <= set(qpa)


def test_not_an_elf_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.so"
    path.write_text("hello")
    with pytest.raises(ValueError, match="not a 64-bit ELF"):
        qt_libs.elf_needed(path)


def test_a_library_the_system_lacks_is_reported_and_bundled_ones_are_not(tmp_path: Path) -> None:
    qt = fake_qt(tmp_path)
    files = [qt / "plugins" / "platforms" / "libqxcb.so"]
    missing = qt_libs.missing_libraries(files, qt / "lib")
    assert FAKE in missing
    assert "libQt6XcbQpa.so.6" not in missing  # Qt bundles it
    assert qt_libs.missing_libraries(files, qt / "lib", available=lambda name: True) == []


def test_the_check_prints_the_command_and_fails_instead_of_a_qt_abort(tmp_path: Path) -> None:
    qt = fake_qt(tmp_path)
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "DISPLAY": ":99", "QT_QPA_PLATFORM": "xcb"}
    code = "import sys, pathlib; from app.system import qt_libs as q; "
    code += "sys.exit(q.check(pathlib.Path(sys.argv[1])))"
    run = subprocess.run(
        [sys.executable, "-c", code, str(qt)],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    assert FAKE in run.stderr
    assert "Also install the package that provides: " + FAKE in run.stderr


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DISPLAY": ":0"}, True),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb"}, True),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, False),
        ({"QT_QPA_PLATFORM": "xcb"}, False),  # no display: nothing to open a window on
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, False),  # Qt picks wayland
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb"}, True),
    ],
)
def test_when_the_check_applies(env: dict[str, str], expected: bool) -> None:
    assert qt_libs.applies(env, "linux") is expected
    assert qt_libs.applies(env, "darwin") is False


def test_package_names_per_distribution() -> None:
    missing = ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert qt_libs.package_manager('ID=debian\nVERSION_ID="12"') == "apt"
    assert qt_libs.package_manager('ID=linuxmint\nID_LIKE="ubuntu debian"') == "apt"
    assert qt_libs.package_manager("ID=fedora") == "dnf"
    assert qt_libs.package_manager("ID=arch") == "pacman"
    assert qt_libs.package_manager("ID=gentoo") == ""
    text = qt_libs.advice(missing, "apt")
    assert "sudo apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in text
    assert "apt-get install -y libxcb-cursor0" in qt_libs.advice(missing, "apt", root=True)
    assert "sudo apt-get" not in qt_libs.advice(missing, "apt", root=True)
    assert "sudo dnf install -y xcb-util-cursor xcb-util-wm xcb-util-keysyms" in qt_libs.advice(
        missing, "dnf"
    )
    assert "xcb-util-cursor xcb-util-wm xcb-util-keysyms" in qt_libs.advice(missing, "pacman")
    assert "libxcb-cursor0" in qt_libs.advice(missing, "")  # unknown distro: Debian names
