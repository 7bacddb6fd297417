"""Before the window opens on Linux/X11: are the system libraries Qt's xcb plugin needs there?

Owns: reading the ``NEEDED`` entries of PySide6's xcb platform plugin (and of the Qt library it
loads) straight from the ELF files, finding which of them this machine lacks (the ``ldconfig``
cache, then ``LD_LIBRARY_PATH``), and saying exactly what to install: the ``apt-get`` command on
Debian/Ubuntu, ``dnf`` or ``pacman`` names where known. As root with apt and
``HEARTH_INSTALL_SYSTEM_DEPS=1`` it installs them itself. Does not own Qt start-up.

Why: the pip wheel bundles Qt but not the X11 helper libraries. On a fresh Debian 12 desktop
``libxcb-cursor0``, ``libxcb-icccm4`` and ``libxcb-keysyms1`` (at least) are missing; Qt then
prints "could not load the Qt platform plugin xcb" and aborts, and the window never opens.

``python -m app.system.qt_libs`` (run by ``make run`` first) exits 0 when nothing is missing or
the check does not apply (not Linux, no X display, another QPA platform), else prints the
command and exits 1. ``python -m app`` runs the same check before it creates the application.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from app.system import environment

ENV_INSTALL = environment.INSTALL_SYSTEM_DEPS.name

# soname -> (Debian/Ubuntu, Fedora, Arch) package. Sonames not listed are reported by name.
PACKAGES: dict[str, tuple[str, str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image"),
    "libxcb-render-util.so.0": (
        "libxcb-render-util0",
        "xcb-util-renderutil",
        "xcb-util-renderutil",
    ),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus"),
}
_MANAGERS = ("apt", "dnf", "pacman")
_INSTALL = {
    "apt": "sudo apt-get install -y",
    "dnf": "sudo dnf install -y",
    "pacman": "sudo pacman -S --needed",
}
_SHT_DYNAMIC, _DT_NEEDED = 6, 1
_EM_ARCH = {62: "x86-64", 183: "AArch64"}  # ELF e_machine -> the tag `ldconfig -p` prints


# --- reading the plugin ----------------------------------------------------------------------


def qt_dir() -> Path | None:
    """PySide6's bundled ``Qt`` folder, found without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "Qt"


def plugin_files(qt: Path) -> list[Path]:
    """The xcb platform plugin and the Qt library it loads, where they exist."""
    candidates = [qt / "plugins" / "platforms" / "libqxcb.so", qt / "lib" / "libQt6XcbQpa.so.6"]
    return [path for path in candidates if path.is_file()]


def elf_needed(path: Path) -> tuple[list[str], int]:
    """(the ``DT_NEEDED`` sonames, the ELF machine) of a 64-bit ELF shared object."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{path} is not a 64-bit ELF file")
    order = "<" if data[5] == 1 else ">"
    machine = struct.unpack_from(order + "H", data, 0x12)[0]
    shoff = struct.unpack_from(order + "Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
    sections = [
        struct.unpack_from(order + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    needed: list[str] = []
    for _name, kind, _flags, _addr, offset, size, link, *_rest in sections:
        if kind != _SHT_DYNAMIC:
            continue
        strtab = sections[link][4]
        for entry in range(offset, offset + size, 16):
            tag, value = struct.unpack_from(order + "qQ", data, entry)
            if tag == 0:
                break
            if tag == _DT_NEEDED:
                end = data.index(b"\0", strtab + value)
                needed.append(data[strtab + value : end].decode())
    return needed, machine


# --- finding what is missing -----------------------------------------------------------------


def system_sonames(arch: str | None) -> set[str] | None:
    """Sonames in the dynamic linker's cache for ``arch``; None if ``ldconfig`` is absent."""
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None
    )
    if ldconfig is None:
        return None
    try:
        listing = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = set()
    for line in listing.splitlines()[1:]:
        # "\tlibxcb.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libxcb.so.1"
        name, _, rest = line.strip().partition(" (")
        if arch is None or arch in rest.partition(")")[0]:  # not a 32-bit library's entry
            found.add(name)
    return found


def _on_library_path(soname: str) -> bool:
    folders = os.environ.get("LD_LIBRARY_PATH", "").split(":")
    return any(folder and (Path(folder) / soname).exists() for folder in folders)


def missing_libraries(
    files: Iterable[Path], bundled: Path | None, available: Callable[[str], bool] | None = None
) -> list[str]:
    """Sonames the given ELF files need that neither Qt bundles (``bundled``) nor the system
    provides, in first-seen order. ``available`` overrides the system lookup (tests)."""
    needed: list[str] = []
    machine = 0
    for path in files:
        names, machine = elf_needed(path)
        needed += [name for name in names if name not in needed]
    shipped = {p.name for p in bundled.iterdir()} if bundled and bundled.is_dir() else set()
    if available is None:
        cache = system_sonames(_EM_ARCH.get(machine))
        available = _loader_check if cache is None else cache.__contains__
    return [
        name
        for name in needed
        if name not in shipped and not available(name) and not _on_library_path(name)
    ]


def _loader_check(soname: str) -> bool:
    """Without ldconfig: ask the dynamic loader itself (loads the library into this process)."""
    import ctypes

    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


# --- what to tell the user -------------------------------------------------------------------


def package_manager(os_release: str | None = None) -> str:
    """``apt``, ``dnf``, ``pacman`` or ``""``, from /etc/os-release's ID and ID_LIKE."""
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
        except OSError:
            os_release = ""
    ids: list[str] = []
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        if key in ("ID", "ID_LIKE"):
            ids += value.strip().strip('"').split()
    families = {"apt": {"debian", "ubuntu"}, "dnf": {"fedora", "rhel", "centos"}}
    families["pacman"] = {"arch", "manjaro"}
    for manager in _MANAGERS:
        if families[manager] & set(ids):
            return manager
    return ""


def packages_for(missing: Iterable[str], manager: str) -> list[str]:
    """Package names for ``manager`` of the sonames it knows, without duplicates."""
    column = _MANAGERS.index(manager) if manager in _MANAGERS else 0
    names: list[str] = []
    for soname in missing:
        name = PACKAGES[soname][column] if soname in PACKAGES else ""
        if name and name not in names:
            names.append(name)
    return names


def advice(missing: list[str], manager: str, root: bool = False) -> str:
    """What to print: the missing libraries and the command that installs them."""
    lines = [
        "Hearth cannot open its window: Qt's X11 (xcb) plugin needs system libraries that "
        "are not installed:",
        "  " + " ".join(missing),
    ]
    packages = " ".join(packages_for(missing, manager or "apt"))
    if packages and manager:
        command = _INSTALL[manager].removeprefix("sudo " if root else "")
        lines += ["Install them with:", f"  {command} {packages}"]
    elif packages:
        lines += [f"Install the packages that provide them (on Debian/Ubuntu: {packages})."]
    unknown = [soname for soname in missing if soname not in PACKAGES]
    if unknown:
        lines.append("Also install the package that provides: " + " ".join(unknown))
    if manager == "apt":
        lines.append(f"(Or run as root with {ENV_INSTALL}=1 and Hearth installs them with apt.)")
    return "\n".join(lines)


# --- the check -------------------------------------------------------------------------------


def applies(environ: dict[str, str] | None = None, platform: str | None = None) -> bool:
    """Whether Qt would use the xcb plugin: Linux, an X display, and QPA unset or xcb (unset on
    a Wayland session means Qt's wayland plugin, which these libraries do not concern)."""
    env = os.environ if environ is None else environ
    if (platform or sys.platform) != "linux" or not env.get("DISPLAY"):
        return False
    qpa = env.get("QT_QPA_PLATFORM", "")
    if qpa:
        return qpa.split(":")[0].split(";")[0] == "xcb"
    return not env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE") != "wayland"


def _may_install(manager: str) -> bool:
    return (
        manager == "apt"
        and environment.INSTALL_SYSTEM_DEPS.forced() is True
        and hasattr(os, "geteuid")
        and os.geteuid() == 0
        and shutil.which("apt-get") is not None
    )


def check(qt: Path | None = None) -> int:
    """0 when the window can open (or the check does not apply), else 1 after printing the
    fix; installs the packages first when allowed (root, apt, ``HEARTH_INSTALL_SYSTEM_DEPS``)."""
    if not applies():
        return 0
    qt = qt or qt_dir()
    if qt is None:
        return 0  # no PySide6 here: the import error says more than we could
    files = plugin_files(qt)
    missing = missing_libraries(files, qt / "lib")
    if not missing:
        return 0
    manager = package_manager()
    packages = packages_for(missing, "apt")
    if packages and _may_install(manager):
        print(f"Installing {' '.join(packages)} (Qt's xcb plugin needs them)…", file=sys.stderr)
        command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
        if subprocess.run(command, check=False).returncode == 0:
            missing = missing_libraries(files, qt / "lib")
            if not missing:
                return 0
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    print(advice(missing, manager, root), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(check())
