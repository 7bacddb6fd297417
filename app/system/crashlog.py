"""Crash logs: what went wrong last time, kept in the user's log dir for the next start.

Owns the files ``crash-YYYYmmdd-HHMMSS-<pid>.log`` (one per uncaught exception: traceback,
versions, platform) and ``fatal-<pid>.log`` (faulthandler output for hard crashes such as a
segfault in native code, where Python cannot run an excepthook). A ``fatal-*`` file left by a
process that is no longer running and that holds text becomes a ``crash-*`` log at the next
``install()``; empty ones are removed.

``pending_crash_log`` returns the newest log not yet acknowledged; ``acknowledge`` marks it with
an empty ``<name>.ack`` sidecar so the file itself stays where the user may have seen it.
Knows nothing about dialogs (see app/views/dialogs/crash.py) and never imports torch.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import platform
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TextIO

CRASH_PREFIX = "crash-"
FATAL_PREFIX = "fatal-"
ACK_SUFFIX = ".ack"
KEEP_LOGS = 20  # older crash logs are pruned so the folder cannot grow without bound


def install(log_dir: Path) -> Path | None:
    """Log uncaught exceptions (main and other threads) and hard crashes under ``log_dir``.

    The previous hooks still run afterwards, so the traceback also reaches stderr as usual.
    Returns the folder used: ``log_dir``, or a per-user folder under the system's temporary
    folder when ``log_dir`` cannot be written (a read-only home must not stop Hearth at
    start); None when neither can, and errors then reach stderr only.
    """
    for folder in (Path(log_dir), fallback_log_dir()):
        if not _writable(folder):
            continue
        with contextlib.suppress(OSError):  # another process may be renaming the same files
            _adopt_fatal_logs(folder)
            _prune(folder)
        _install_excepthooks(folder)
        with contextlib.suppress(OSError):
            _enable_faulthandler(folder)
        return folder
    return None


def fallback_log_dir() -> Path:
    user = getattr(os, "getuid", lambda: "user")()
    return Path(tempfile.gettempdir()) / f"hearth-logs-{user}"


def _writable(folder: Path) -> bool:
    """Create ``folder`` if needed and prove a file can be written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def pending_crash_log(log_dir: Path) -> Path | None:
    """The newest crash log that has not been acknowledged, or None."""
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return None
    pending = [p for p in _crash_logs(log_dir) if not _ack_path(p).exists()]
    return pending[-1] if pending else None


def acknowledge(path: Path) -> None:
    """Mark a crash log as seen so the next start does not offer it again."""
    _ack_path(Path(path)).touch()


def write_crash_log(log_dir: Path, exc: BaseException, thread_name: str | None = None) -> Path:
    """Write one crash log for ``exc`` and return its path."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(log_dir) / f"{CRASH_PREFIX}{stamp}-{os.getpid()}.log"
    # Two exceptions within a second in one process: keep both.
    n = 1
    while path.exists():
        n += 1
        path = path.with_name(f"{CRASH_PREFIX}{stamp}-{os.getpid()}-{n}.log")
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    where = f"thread {thread_name}" if thread_name else "main thread"
    path.write_text(f"{_header()}\nUncaught exception in {where}:\n\n{tb}", encoding="utf-8")
    return path


def _header() -> str:
    lines = [
        f"Hearth crash report, {datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"Hearth: {_version('hearth')}",
        f"Python: {sys.version.split()[0]} ({sys.executable})",
        f"Platform: {platform.platform()} ({platform.machine()})",
    ]
    # Only report libraries already loaded: importing torch here would be slow and, in app/,
    # against the import rules.
    for module in ("PySide6", "torch", "transformers"):
        mod = sys.modules.get(module)
        if mod is not None:
            lines.append(f"{module}: {getattr(mod, '__version__', '?')}")
    lines.append(f"Command line: {' '.join(sys.argv)}")
    return "\n".join(lines) + "\n"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown (not installed)"


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def _install_excepthooks(log_dir: Path) -> None:
    previous: ExceptHook = sys.excepthook
    previous_thread = threading.excepthook

    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if not issubclass(exc_type, KeyboardInterrupt):
            _write_quietly(log_dir, exc.with_traceback(tb), None)
        previous(exc_type, exc, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None and not issubclass(args.exc_type, SystemExit):
            name = args.thread.name if args.thread is not None else None
            _write_quietly(log_dir, args.exc_value.with_traceback(args.exc_traceback), name)
        previous_thread(args)

    sys.excepthook = hook
    threading.excepthook = thread_hook


def _write_quietly(log_dir: Path, exc: BaseException, thread_name: str | None) -> None:
    # A failing crash logger must not hide the original error: the previous hook still prints it.
    with contextlib.suppress(OSError):
        write_crash_log(log_dir, exc, thread_name)


_fatal_file: TextIO | None = None  # kept open for the life of the process, as faulthandler needs


def _enable_faulthandler(log_dir: Path) -> None:
    global _fatal_file
    if _fatal_file is not None:  # install() called twice: keep the first file
        return
    path = log_dir / f"{FATAL_PREFIX}{os.getpid()}.log"
    _fatal_file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (must outlive this function)
    _fatal_file.write(_header() + "\nFatal error (faulthandler):\n\n")
    _fatal_file.flush()
    faulthandler.enable(file=_fatal_file, all_threads=True)
    global _fatal_path
    _fatal_path = path
    atexit.register(end_normally)


def end_normally() -> None:
    """Mark this run as ended normally before leaving with ``os._exit`` (which skips atexit):
    the fatal-error file is removed, so the next start reports no crash."""
    global _fatal_path
    if _fatal_path is not None:
        _remove_own_fatal_file(_fatal_path)
        _fatal_path = None


_fatal_path: Path | None = None


def _remove_own_fatal_file(path: Path) -> None:
    """A normal exit (including sys.exit and SIGTERM handled by the app) leaves no fatal log."""
    global _fatal_file
    faulthandler.disable()
    if _fatal_file is not None:
        _fatal_file.close()
        _fatal_file = None
    path.unlink(missing_ok=True)


def _adopt_fatal_logs(log_dir: Path) -> None:
    """Turn fatal-<pid>.log files of dead processes into crash logs (or drop them if empty)."""
    for path in log_dir.glob(f"{FATAL_PREFIX}*.log"):
        pid = path.stem.removeprefix(FATAL_PREFIX)
        if not pid.isdigit() or _pid_alive(int(pid)):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "File " in text or "Fatal Python error" in text:
            stamp = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y%m%d-%H%M%S")
            path.rename(log_dir / f"{CRASH_PREFIX}{stamp}-{pid}.log")
        else:
            path.unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        import psutil

        return bool(psutil.pid_exists(pid))
    except ImportError:  # psutil is a dependency, but a crash logger should not need it
        return False


def _crash_logs(log_dir: Path) -> list[Path]:
    logs = [p for p in log_dir.glob(f"{CRASH_PREFIX}*.log") if p.is_file()]
    return sorted(logs, key=lambda p: (p.stat().st_mtime, p.name))


def _ack_path(path: Path) -> Path:
    return path.with_name(path.name + ACK_SUFFIX)


def _prune(log_dir: Path) -> None:
    for old in _crash_logs(log_dir)[:-KEEP_LOGS]:
        old.unlink(missing_ok=True)
        _ack_path(old).unlink(missing_ok=True)
