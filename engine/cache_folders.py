"""The cache folder and the one rule for what is derived from a GGUF file.

Owns where Hearth's cache lives (`cache_root`), the identity of a GGUF file (`gguf_cache_key`:
size, mtime and a hash of its first and last MiB), and how a folder derived from one file
records that file (`mark_source`) so that a newer derivation replaces only the older ones *of
the same file* (`remove_other_versions`). Both the header cache (`engine.header_cache`,
``gguf-meta/``) and the fast path's conversions (`engine.fastpath.cache`, ``onnx/``) follow it.
Every cache folder is published one way (`publish_folder`): written in a temporary sibling,
renamed into place, the temporary gone on any failure, leftovers of a crash swept later.

Why the source path and not the file name: two different files of the same name (a Hearth
download and LM Studio's copy of another quant) used to evict each other's conversion on every
open, so each open converted again. Does not own what goes into a folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from engine import settings

SOURCE_FILE = "source.json"  # {"source": "/abs/path/of/the.gguf"}, written with the folder
TMP_PREFIX = ".tmp-"  # a folder being written; one older than STALE_TMP_S was cut off
STALE_TMP_S = 3600  # a conversion younger than this may be another process's, running now


def cache_root() -> Path:
    """$HEARTH_CACHE_DIR, else the platform's user cache dir for "hearth"."""
    env = settings.CACHE_DIR.path()
    if env is not None:
        return env
    import platformdirs

    return Path(platformdirs.user_cache_dir("hearth"))


def conversation_cache_dir() -> Path:
    """Where chats' saved KV caches live: $HEARTH_CHAT_CACHE_DIR, else ``conversations/`` in
    the cache root (tests point it at a temporary folder: they must not fill the user's)."""
    env = settings.CHAT_CACHE_DIR.path()
    return env if env is not None else cache_root() / "conversations"


def gguf_cache_key(path: Path) -> str:
    """Identity of a GGUF file: size + mtime + sha256 of its first and last MiB."""
    st = path.stat()
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with path.open("rb") as f:
        h.update(f.read(2**20))
        f.seek(max(0, st.st_size - 2**20))
        h.update(f.read(2**20))
    return h.hexdigest()[:20]


def mark_source(folder: Path, gguf: Path) -> None:
    """Record which file ``folder`` was derived from (call before it is moved into place)."""
    text = json.dumps({"source": str(gguf.resolve())})
    (folder / SOURCE_FILE).write_text(text, encoding="utf-8")


def source_of(folder: Path) -> str | None:
    """The file ``folder`` was derived from; None for a folder written before it was marked."""
    try:
        source = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8")).get("source")
    except (OSError, ValueError, AttributeError):
        return None
    return source if isinstance(source, str) else None


def remove_other_versions(
    current: Path,
    gguf: Path,
    *,
    unmarked: bool = False,
    alike: Callable[[Path], bool] | None = None,
) -> int:
    """Delete the folders beside ``current`` derived from an older state of ``gguf`` (another
    size, mtime, graph or runtime version); return how many. A folder of another file of the
    same name is kept. ``unmarked`` also deletes same-name folders written before marking
    existed (their source is unknown: at worst another file converts once more). ``alike``
    narrows the candidates (a graph of another accuracy is kept beside this one)."""
    source = str(gguf.resolve())
    removed = 0
    for other in current.parent.glob(f"{gguf.stem}-*"):
        if other == current or not other.is_dir() or (alike is not None and not alike(other)):
            continue
        theirs = source_of(other)
        if theirs == source or (theirs is None and unmarked):
            shutil.rmtree(other, ignore_errors=True)
            removed += 1
    return removed


def publish_folder(
    target: Path,
    write: Callable[[Path], None],
    *,
    keep: Callable[[Path], bool] = Path.exists,
    source: Path | None = None,
) -> Path:
    """Publish the cache folder ``target``: ``write`` fills a temporary sibling, which is then
    renamed into place, so no reader ever sees half a folder and a crash leaves none.

    ``keep(target)`` says whether a folder already there is good: another process finished
    the same one meanwhile and may be reading it, so ours is dropped. One that is not good
    (an older format, a damaged build, a rebuild asked for) is moved aside before it is
    deleted. ``source`` is the GGUF the folder derives from (`mark_source`). On any failure
    the temporary goes and the error propagates; leftovers of a process that died mid-write
    are swept here, once they are older than any write still running."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale(target.parent)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=target.parent))
    try:
        write(tmp)
        if source is not None:
            mark_source(tmp, source)
        if target.exists() and keep(target):
            shutil.rmtree(tmp, ignore_errors=True)
            return target
        discard_folder(target)
        try:
            tmp.rename(target)
        except OSError:  # another process published the same folder first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def discard_folder(folder: Path) -> None:
    """Delete ``folder``, first renamed aside: a reader never finds half of it under its name,
    and a process that still maps a file in it keeps its pages (POSIX)."""
    if not folder.exists():
        return
    aside = folder.with_name(f"{TMP_PREFIX}old-{folder.name}-{time.monotonic_ns()}")
    try:
        folder.rename(aside)
    except OSError:
        aside = folder  # gone meanwhile, or not renamable: delete in place
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            aside.unlink()


def _sweep_stale(parent: Path) -> None:
    """Delete temporary folders under ``parent`` left by writes that died (older than
    STALE_TMP_S: a younger one may be a conversion running now)."""
    cutoff = time.time() - STALE_TMP_S
    for leftover in parent.glob(f"{TMP_PREFIX}*"):
        with contextlib.suppress(OSError):
            if leftover.is_dir() and leftover.stat().st_mtime < cutoff:
                shutil.rmtree(leftover, ignore_errors=True)
