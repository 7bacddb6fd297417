"""Install (or remove) Hearth's menu entry and icons for the current user on Linux.

``install`` renders assets/hearth.desktop.in into ``$XDG_DATA_HOME/applications/hearth.desktop``
(default ``~/.local/share``) with Exec pointing at the project's ``.venv`` python ``-m app`` (or,
with ``--bundle DIR``, at a PyInstaller build's ``DIR/Hearth``), copies the icons into
``$XDG_DATA_HOME/icons/hicolor/<N>x<N>/apps/hearth.png`` and ``scalable/apps/hearth.svg``, and
refreshes the desktop and icon caches when their tools are present. ``uninstall`` removes exactly
those files (the .desktop only if it carries our marker, so a user's own entry survives).

Standard library only: ``make uninstall-desktop`` runs it with the system python, which has no
PySide6. Owns nothing inside the app; the desktop file ID "hearth" must match
``QGuiApplication.setDesktopFileName("hearth")`` and StartupWMClass the app name "Hearth".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "assets" / "hearth.desktop.in"
ICON_DIR = REPO / "assets" / "icons"
DESKTOP_ID = "hearth.desktop"
ICON_NAME = "hearth"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)  # same list as packaging/make_icons.py
MARKER = "X-Hearth-Installed-By="
# Characters that force an Exec argument into double quotes (Desktop Entry spec, "Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


class InstallError(Exception):
    """Something the user must fix before the entry can be installed (message says what)."""


def data_home() -> Path:
    value = os.environ.get("XDG_DATA_HOME", "").strip()
    return Path(value) if value else Path.home() / ".local" / "share"


def quote_exec_arg(arg: str) -> str:
    """Quote one Exec argument as the spec requires (before the string-level escaping)."""
    arg = arg.replace("%", "%%")  # a literal % must be doubled: %f, %u... are field codes
    if not any(c in _RESERVED for c in arg):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def escape_string(value: str) -> str:
    """Desktop Entry string escaping (applies to Exec after quoting, and to Path/TryExec)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def render_desktop(command: list[str], workdir: Path) -> str:
    """The .desktop text for launching ``command`` in ``workdir``."""
    exec_line = " ".join(quote_exec_arg(a) for a in command)
    text = TEMPLATE.read_text(encoding="utf-8")
    for placeholder, value in (
        ("@EXEC@", escape_string(exec_line)),
        ("@TRYEXEC@", escape_string(command[0])),
        ("@PATH@", escape_string(str(workdir))),
    ):
        text = text.replace(placeholder, value)
    return text


def launch_command(bundle: Path | None) -> tuple[list[str], Path]:
    """(argv, working dir) for the entry: the bundle's executable or the venv's ``-m app``."""
    if bundle is not None:
        exe = bundle.resolve() / "Hearth"
        if not os.access(exe, os.X_OK):
            raise InstallError(f"{exe} is not an executable: run `make package` first")
        return [str(exe)], exe.parent
    python = REPO / ".venv" / "bin" / "python"
    if not os.access(python, os.X_OK):
        raise InstallError(f"{python} is missing: run `make venv` first")
    # Not resolved: .venv/bin/python is usually a symlink to the system python, which would
    # lose the venv's packages.
    return [str(python), "-m", "app"], REPO


def planned_files(home: Path) -> dict[Path, Path | None]:
    """Destination -> source for every file we install (None: the rendered .desktop)."""
    files: dict[Path, Path | None] = {home / "applications" / DESKTOP_ID: None}
    hicolor = home / "icons" / "hicolor"
    for size in PNG_SIZES:
        files[hicolor / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"] = (
            ICON_DIR / f"hearth-{size}.png"
        )
    files[hicolor / "scalable" / "apps" / f"{ICON_NAME}.svg"] = ICON_DIR / "hearth.svg"
    return files


def validate(desktop_file: Path) -> None:
    """Run desktop-file-validate when installed; its errors stop the install."""
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        return
    result = subprocess.run([tool, str(desktop_file)], capture_output=True, text=True)
    if result.returncode != 0:
        raise InstallError(f"desktop-file-validate rejected the entry:\n{result.stdout}")


def refresh_caches(home: Path) -> None:
    """Tell the desktop about the change; every tool here is optional."""
    # Only refresh caches that already exist. Our entry declares no MimeType, so a missing
    # mimeinfo.cache needs nothing from us (menus watch the folder itself), and creating an
    # icon cache in a user theme dir would hide later icons from other apps until someone
    # refreshes it again. This also keeps uninstall from leaving files we created behind.
    apps = home / "applications"
    tool = shutil.which("update-desktop-database")
    if tool and (apps / "mimeinfo.cache").exists():
        subprocess.run([tool, "-q", str(apps)], check=False)
    hicolor = home / "icons" / "hicolor"
    if not hicolor.is_dir():
        return
    tool = shutil.which("gtk-update-icon-cache")
    if tool and (hicolor / "icon-theme.cache").exists():
        subprocess.run([tool, "-q", "-f", "-t", str(hicolor)], check=False)
    else:
        os.utime(hicolor)  # icon themes notice new files by the theme dir's mtime


def install(home: Path, bundle: Path | None) -> list[Path]:
    command, workdir = launch_command(bundle)
    for source in planned_files(home).values():
        if source is not None and not source.exists():
            raise InstallError(f"{source} is missing: run `python packaging/make_icons.py`")
    written = []
    for dest, source in planned_files(home).items():
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source is None:
            text = render_desktop(command, workdir)
            # Validate a copy outside the menu folder (the tool wants a *.desktop name), so a
            # rejected entry never appears in the menu.
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / DESKTOP_ID).write_text(text, encoding="utf-8")
                validate(Path(tmp) / DESKTOP_ID)
            dest.write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(source, dest)
        written.append(dest)
    refresh_caches(home)
    return written


def uninstall(home: Path) -> list[Path]:
    removed = []
    for dest, source in planned_files(home).items():
        if not dest.is_file():
            continue
        if source is None and MARKER not in dest.read_text(encoding="utf-8", errors="replace"):
            continue  # someone else's hearth.desktop: not ours to delete
        dest.unlink()
        removed.append(dest)
    refresh_caches(home)
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install Hearth's menu entry for this user.")
    parser.add_argument("action", choices=("install", "uninstall"))
    parser.add_argument("--bundle", type=Path, help="a PyInstaller one-folder build (dist/Hearth)")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        parser.exit(2, "install_desktop.py is for Linux; see packaging/README.md\n")
    home = data_home()
    try:
        paths = install(home, args.bundle) if args.action == "install" else uninstall(home)
    except InstallError as exc:
        parser.exit(1, f"error: {exc}\n")
    verb = "installed" if args.action == "install" else "removed"
    for path in paths:
        print(f"{verb} {path}")
    if not paths:
        print("nothing to remove")
    return 0


if __name__ == "__main__":
    sys.exit(main())
