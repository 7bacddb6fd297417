"""Where Hearth keeps its files on this machine.

Owns the user data folder (the conversation database) and the log folder.
``HEARTH_DATA_DIR`` moves the data (and, unless they have their own override, the logs) somewhere
else: tests and portable installs use it. Functions only compute paths; `ensure_dir` creates
one. Does not own what goes inside them, nor the model cache (`engine.header_cache`).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from app.system import environment

APP_NAME = "Hearth"
DATABASE_NAME = "hearth.sqlite3"


def data_dir() -> Path:
    """The user data folder: ``$HEARTH_DATA_DIR``, else the platform's (for example
    ``~/.local/share/Hearth``, ``%LOCALAPPDATA%\\Hearth``,
    ``~/Library/Application Support/Hearth``)."""
    override = environment.DATA_DIR.path()
    if override is not None:
        return override
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def database_path() -> Path:
    """The conversation database (`app.store.Store`)."""
    return data_dir() / DATABASE_NAME


def log_dir() -> Path:
    """``$HEARTH_LOG_DIR``; else ``logs`` inside ``$HEARTH_DATA_DIR`` when that is set (so a
    test run keeps its logs to itself); else the platform's user log folder."""
    override = environment.LOG_DIR.path()
    if override is not None:
        return override
    data_override = environment.DATA_DIR.path()
    if data_override is not None:
        return data_override / "logs"
    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) if missing; return it."""
    path.mkdir(parents=True, exist_ok=True)
    return path
