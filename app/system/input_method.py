"""Chinese (and any other) input on Linux: find the user's input method and make Qt reach it.

Qt talks to fcitx5 / ibus through a *platform input-context plugin*. The pip PySide6 ships the
ibus one but not fcitx5's, so with fcitx5 typing Chinese silently does nothing. Before the
QApplication exists, `prepare_input_method` detects the framework (environment variables, then
running daemons) and, in this order:

1. uses a plugin PySide6 already has (ibus; fcitx5's if a later wheel ships it);
2. adds the system's Qt 6 plugin folder when the distribution's ``fcitx5-frontend-qt6`` is
   installed there (Qt itself skips a plugin built for an incompatible Qt);
3. falls back to ibus's protocol, which fcitx5 also speaks when its ibus frontend is installed;
4. otherwise returns advice, which the app shows once, naming the package to install.

Owns detection and the environment variables it sets (``QT_IM_MODULE``, ``QT_PLUGIN_PATH``). Does
not own showing the advice (`app.__main__`) or anything on Windows/macOS, where Qt uses the
system's input methods directly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path

FCITX_PLUGINS = (
    "libfcitx5platforminputcontextplugin.so",
    "libfcitxplatforminputcontextplugin-qt6.so",
)
IBUS_PLUGIN = "libibusplatforminputcontextplugin.so"
SYSTEM_QT6_PLUGIN_DIRS = (
    "/usr/lib/x86_64-linux-gnu/qt6/plugins",
    "/usr/lib/aarch64-linux-gnu/qt6/plugins",
    "/usr/lib/qt6/plugins",
    "/usr/lib64/qt6/plugins",
)
FCITX_IBUS_FRONTENDS = (
    "/usr/lib/x86_64-linux-gnu/fcitx5/libibusfrontend.so",
    "/usr/lib/aarch64-linux-gnu/fcitx5/libibusfrontend.so",
    "/usr/lib/fcitx5/libibusfrontend.so",
    "/usr/lib64/fcitx5/libibusfrontend.so",
)
INSTALL_FCITX_QT6 = {
    "apt": "sudo apt install fcitx5-frontend-qt6",
    "dnf": "sudo dnf install fcitx5-qt6",
    "pacman": "sudo pacman -S fcitx5-qt",
}


@dataclass(frozen=True, slots=True)
class InputMethodStatus:
    """What was found and done. ``advice`` is set only when Chinese input will not work."""

    framework: str | None  # "fcitx" (fcitx5 or 4), "ibus", or None (none in use)
    module: str | None  # the QT_IM_MODULE now in effect
    plugin_dir: str | None = None  # a system plugin folder added to QT_PLUGIN_PATH
    advice: str | None = None  # the command that would fix it, when nothing here could


def detect_framework(env: MutableMapping[str, str], running: Iterable[str]) -> str | None:
    """The input-method framework in use: what the session says, else what is running."""
    said = " ".join(env.get(k, "") for k in ("QT_IM_MODULE", "XMODIFIERS", "GTK_IM_MODULE"))
    said = said.lower()
    if "fcitx" in said:
        return "fcitx"
    if "ibus" in said:
        return "ibus"
    names = set(running)
    if names & {"fcitx5", "fcitx"}:
        return "fcitx"
    if "ibus-daemon" in names:
        return "ibus"
    return None


def running_processes(proc: Path = Path("/proc")) -> set[str]:
    """Command names of running processes (empty where /proc is not there)."""
    names: set[str] = set()
    for comm in proc.glob("[0-9]*/comm"):
        try:
            names.add(comm.read_text().strip())
        except OSError:
            continue  # the process ended while we looked
    return names


def qt_plugin_dir() -> Path:
    """PySide6's own plugin folder, without importing Qt (this runs before the app exists)."""
    import PySide6

    return Path(PySide6.__file__).resolve().parent / "Qt" / "plugins"


def prepare_input_method(
    env: MutableMapping[str, str] | None = None,
    *,
    running: Iterable[str] | None = None,
    own_plugins: Path | None = None,
    system_dirs: Iterable[str] = SYSTEM_QT6_PLUGIN_DIRS,
    ibus_frontends: Iterable[str] = FCITX_IBUS_FRONTENDS,
    package_manager: str | None = None,
) -> InputMethodStatus:
    """Set up ``env`` (default ``os.environ``) so Qt reaches the input method; see module doc."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux") or env.get("QT_QPA_PLATFORM") in (
        "offscreen",
        "minimal",
    ):
        return InputMethodStatus(None, env.get("QT_IM_MODULE"))
    framework = detect_framework(env, running_processes() if running is None else running)
    contexts = (own_plugins or qt_plugin_dir()) / "platforminputcontexts"
    if framework == "ibus":
        if (contexts / IBUS_PLUGIN).exists():
            env.setdefault("QT_IM_MODULE", "ibus")
        return InputMethodStatus(framework, env.get("QT_IM_MODULE"))
    if framework != "fcitx":
        return InputMethodStatus(None, env.get("QT_IM_MODULE"))
    if any((contexts / name).exists() for name in FCITX_PLUGINS):
        env["QT_IM_MODULE"] = "fcitx"
        return InputMethodStatus(framework, "fcitx")
    for folder in system_dirs:
        if any((Path(folder) / "platforminputcontexts" / n).exists() for n in FCITX_PLUGINS):
            paths = [p for p in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p]
            env["QT_PLUGIN_PATH"] = os.pathsep.join([*paths, folder])
            env["QT_IM_MODULE"] = "fcitx"
            return InputMethodStatus(framework, "fcitx", plugin_dir=folder)
    if any(Path(p).exists() for p in ibus_frontends) and (contexts / IBUS_PLUGIN).exists():
        env["QT_IM_MODULE"] = "ibus"  # fcitx5 answers on ibus's D-Bus interface too
        return InputMethodStatus(framework, "ibus")
    manager = package_manager or _package_manager()
    command = INSTALL_FCITX_QT6.get(manager or "", INSTALL_FCITX_QT6["apt"])
    return InputMethodStatus(framework, env.get("QT_IM_MODULE"), advice=command)


def _package_manager() -> str | None:
    for name in ("apt", "dnf", "pacman"):
        if any((Path(d) / name).exists() for d in ("/usr/bin", "/bin")):
            return name
    return None
