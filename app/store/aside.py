"""Moving a database that cannot be opened out of the way, so Hearth can start fresh.

Owns renaming the file and its SQLite companions (``-wal``, ``-shm``, ``-journal``) to
``<name>.aside-YYYYmmdd-HHMMSS`` next to it. Never deletes anything: the moved file keeps
every byte for a newer Hearth or a recovery tool. Does not own deciding to do it (the
start-up dialog, `app.views.dialogs.store_problem`).
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path

COMPANIONS = ("-wal", "-shm", "-journal")


def move_aside(path: Path) -> Path:
    """Rename ``path`` (and its companions, so SQLite pairs them again) to a free
    ``.aside-<stamp>`` name; return the new path. `OSError` if the main file cannot be moved;
    a companion that cannot be moved puts the main file back first (a database separated from
    its write-ahead log would lose its last commits)."""
    target = _free_name(path)
    path.rename(target)
    moved: list[tuple[Path, Path]] = [(target, path)]
    try:
        for suffix in COMPANIONS:
            companion = path.with_name(path.name + suffix)
            if companion.exists():
                companion.rename(target.with_name(target.name + suffix))
                moved.append((target.with_name(target.name + suffix), companion))
    except OSError:
        for new, old in reversed(moved):
            with contextlib.suppress(OSError):
                new.rename(old)
        raise
    return target


def _free_name(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.aside-{stamp}")
    n = 1
    while target.exists() or any(target.with_name(target.name + s).exists() for s in COMPANIONS):
        n += 1
        target = path.with_name(f"{path.name}.aside-{stamp}-{n}")
    return target
