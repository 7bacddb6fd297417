"""Resumable, verified downloads of one GGUF file from the Hub (or a mirror).

Owns a download from start to finish: the remote size and LFS sha256 (a HEAD on the file's
``resolve/`` URL: X-Linked-Size, X-Linked-Etag), a disk-space check before any byte is written,
a ``.part`` file plus a JSON sidecar under ``<models>/.partial/`` (so a cancelled or interrupted
download resumes, even after a restart, with a Range request from where it stopped — the prefix
is re-hashed, never trusted blindly), hashing while writing, refusing a file whose sha256 is not
the Hub's (deleted: a corrupted file never becomes a model), and an atomic rename into the
models folder. huggingface_hub's own downloader does not verify sha256, so the transfer is ours
over its session, headers and URL scheme (HF_ENDPOINT, HF_TOKEN honoured).
Does not own listing files (`engine.hub.search`), the models folder (`engine.hub.library`) or
the partial file's bytes, sidecar, lock and final rename (`engine.hub.partial`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import shutil
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import (
    DiskFullError,
    DownloadCancelled,
    EngineError,
    HubError,
    HubOfflineError,
    NotGGUFError,
)
from engine.gguf.reader import GGUF_MAGIC
from engine.hub import transport
from engine.hub.library import models_dir
from engine.hub.names import saved_name
from engine.hub.partial import CHUNK, PARTIAL_DIR, Partial
from engine.hub.search import HubFile, quant_of

ProgressFn = Callable[[int, int], None]  # (bytes held, total bytes)
DISK_MARGIN = 64 * 2**20  # leave this much free beyond the file itself
MAX_RETRIES = 5  # consecutive connection losses without progress before giving up
RETRY_BACKOFF_S = 0.5  # doubled after each loss
# A server that trickles (one byte every 20 s) never trips the read timeout: a transfer that
# brings fewer than STALL_MIN_BYTES in STALL_WINDOW_S is stopped as stalled (partial kept).
STALL_WINDOW_S = 60.0
STALL_MIN_BYTES = 64 * 1024


@dataclass(frozen=True)
class PendingDownload:
    """A download that stopped before it finished (cancelled, interrupted, app closed)."""

    file: HubFile
    part_path: Path
    downloaded: int
    total: int
    endpoint: str | None


def download(
    file: HubFile,
    *,
    dest_dir: Path | str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    token_hosts: Collection[str] = (),
) -> Path:
    """Download ``file`` into ``dest_dir`` (default: the models folder); return its path.

    Resumes a partial download of the same file version. Raises DownloadCancelled (partial
    kept), DiskFullError, ChecksumMismatchError (file deleted) or a Hub error. The token goes
    only to huggingface.co or a mirror in ``token_hosts`` (`transport.token_allowed`).
    """
    auth = _Auth(token, token_hosts)
    folder = Path(dest_dir) if dest_dir is not None else models_dir()
    # Never a path out of the folder, on any OS; a projector gets its model's name.
    final = folder / saved_name(file.repo_id, file.filename)
    url = transport.file_url(file.repo_id, file.filename, endpoint=endpoint)
    what = f"{file.repo_id}/{file.filename}"
    with transport.hub_errors(what=what, repo_id=file.repo_id, endpoint=endpoint):
        size, sha256 = _remote_identity(url, file, auth)
    if final.is_file() and final.stat().st_size == size and _sha256_of(final) == sha256:
        return final  # already here, and the same file
    job = Partial(folder, file, size, sha256, transport.resolve_endpoint(endpoint))
    try:
        job.lock()
    except OSError as exc:
        raise EngineError(f"cannot write into the models folder {folder}: {exc}") from exc
    try:
        check_disk_space(folder, size - job.held())
        job.prepare()
        with transport.hub_errors(what=what, repo_id=file.repo_id, endpoint=endpoint):
            _transfer(url, auth, job, progress or (lambda _d, _t: None), cancel)
        return job.finish(final)
    except (DiskFullError, NotGGUFError):
        job.discard()  # nothing half-done left behind
        raise
    except OSError as exc:  # permissions, a vanished folder: the partial stays for a retry
        raise EngineError(f"cannot write the download into {folder}: {exc}") from exc
    finally:
        job.unlock()


def pending_downloads(dest_dir: Path | str | None = None) -> list[PendingDownload]:
    """The unfinished downloads in ``dest_dir`` (default: the models folder), to offer a
    resume after a restart."""
    folder = (Path(dest_dir) if dest_dir is not None else models_dir()) / PARTIAL_DIR
    pending = []
    for sidecar in sorted(folder.glob("*.part.json")) if folder.is_dir() else []:
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            file = HubFile(
                meta["repo_id"],
                meta["filename"],
                int(meta["size"]),
                meta["sha256"],
                quant_of(meta["filename"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        part = sidecar.with_suffix("")
        held = part.stat().st_size if part.is_file() else 0
        pending.append(PendingDownload(file, part, held, file.size_bytes, meta.get("endpoint")))
    return pending


def discard_download(pending: PendingDownload) -> None:
    """Delete an unfinished download's partial file and sidecar."""
    for path in (pending.part_path, pending.part_path.with_name(pending.part_path.name + ".json")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def check_disk_space(folder: Path, needed: int) -> None:
    """DiskFullError unless ``folder``'s file system has ``needed`` bytes (plus a margin) free."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent  # the folder may not exist yet: ask its nearest existing parent
    free = shutil.disk_usage(probe).free
    if needed + DISK_MARGIN > free:
        gb = 1e9
        raise DiskFullError(
            f"not enough disk space in {folder}: the download needs {needed / gb:.2f} GB more "
            f"but only {free / gb:.2f} GB is free; free some space or choose another models "
            "folder (HEARTH_MODELS_DIR)"
        )


@dataclass(frozen=True)
class _Auth:
    """The caller's token and the mirrors approved for it, carried to each request."""

    token: str | None
    hosts: Collection[str]

    def token_for(self, url: str) -> str | None:
        return transport.resolve_token(self.token, where=url, token_hosts=self.hosts)

    def headers_for(self, url: str) -> dict[str, str]:
        return transport.hub_headers(self.token, where=url, token_hosts=self.hosts)


def _remote_identity(url: str, file: HubFile, auth: _Auth) -> tuple[int, str]:
    """(size, sha256) of the file the Hub serves now: its LFS hash, from the repo listing or
    the X-Linked-Etag header; a file without one cannot be verified and is refused."""
    from huggingface_hub import get_hf_file_metadata

    meta = get_hf_file_metadata(url, token=auth.token_for(url) or False)
    etag = (meta.etag or "").strip('"').lower()
    sha256 = (file.sha256 or (etag if _is_sha256(etag) else "")).lower()
    if not sha256:
        raise HubError(
            f"{file.repo_id}/{file.filename} has no sha256 on the Hub (not an LFS file), so "
            "a download could not be verified; Hearth does not download unverifiable models"
        )
    size = int(meta.size if meta.size is not None else file.size_bytes)
    return size, sha256


def _sha256_of(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            hasher.update(block)
    return hasher.hexdigest()


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _transfer(
    url: str,
    auth: _Auth,
    job: Partial,
    progress: ProgressFn,
    cancel: threading.Event | None,
) -> None:
    """Fill the partial file, resuming after each lost connection."""
    import httpx2

    hasher = job.rehash()
    progress(job.held(), job.size)
    failures, furthest = 0, job.held()  # only bytes beyond the furthest point count as progress
    while job.held() < job.size:
        try:
            hasher = _stream_into(url, auth, job, hasher, progress, cancel)
            lost: Exception | None = None
        except httpx2.TransportError as exc:
            lost = exc
        if job.held() < job.size:  # the connection dropped, or the body ended early
            failures = 0 if job.held() > furthest else failures + 1
            furthest = max(furthest, job.held())
            if failures >= MAX_RETRIES:
                why = type(lost).__name__ if lost else "the server ended the transfer early"
                raise HubOfflineError(
                    f"the connection was lost at {job.held()} of {job.size} bytes ({why}); "
                    "the download resumes from there when started again"
                ) from lost
            time.sleep(RETRY_BACKOFF_S * 2 ** max(failures - 1, 0))
    job.digest = hasher.hexdigest()


def _stream_into(
    url: str,
    auth: _Auth,
    job: Partial,
    hasher: Any,
    progress: ProgressFn,
    cancel: threading.Event | None,
) -> Any:
    """One GET from the held offset to the end; returns the (possibly restarted) hasher."""
    if cancel is not None and cancel.is_set():
        raise DownloadCancelled(
            f"download of {job.file.filename} cancelled at {job.held()} of {job.size} bytes; "
            "it resumes from there when started again"
        )
    start = job.held()
    headers = auth.headers_for(url)
    if start:
        headers["Range"] = f"bytes={start}-"
    client = transport.session()
    with client.stream(
        "GET", url, headers=headers, follow_redirects=True, timeout=transport.timeout()
    ) as response:
        if response.status_code == 416:  # the part is not a prefix of this file: start over
            job.truncate()
            return hashlib.sha256()
        if response.status_code >= 400:
            response.read()
            transport.raise_for_status(response)
        if start and response.status_code != 206:  # the server ignored Range: start over
            job.truncate()
            hasher, start = hashlib.sha256(), 0
        stall = _StallWatch(job)
        with job.part.open("ab") as out:
            for chunk in response.iter_bytes():  # as it arrives: a lost connection loses nothing
                if cancel is not None and cancel.is_set():
                    raise DownloadCancelled(
                        f"download of {job.file.filename} cancelled at {out.tell()} of "
                        f"{job.size} bytes; it resumes from there when started again"
                    )
                if out.tell() == 0:
                    _check_magic(chunk, job)
                chunk = chunk[: job.size - out.tell()]  # never past the announced size
                _write(out, chunk, job)
                hasher.update(chunk)
                progress(out.tell(), job.size)
                if out.tell() >= job.size:
                    break  # whatever the server sends beyond the file is not the file
                stall.check(out.tell())
    return hasher


class _StallWatch:
    """Stops a transfer that brings fewer than STALL_MIN_BYTES per STALL_WINDOW_S."""

    def __init__(self, job: Partial) -> None:
        self.job = job
        self.since, self.at = time.monotonic(), job.held()

    def check(self, held: int) -> None:
        if time.monotonic() - self.since < STALL_WINDOW_S:
            return
        if held - self.at < STALL_MIN_BYTES:
            raise HubOfflineError(
                f"the download of {self.job.file.filename} stalled at {held} of "
                f"{self.job.size} bytes (under {STALL_MIN_BYTES // 1024} KB in "
                f"{STALL_WINDOW_S:g} s); it resumes from there when started again"
            )
        self.since, self.at = time.monotonic(), held


def _check_magic(first: bytes, job: Partial) -> None:
    """Stop at the first bytes when the file is not a GGUF (nothing left behind)."""
    if len(first) >= 4 and first[:4] != GGUF_MAGIC:
        raise NotGGUFError(
            f"{job.file.repo_id}/{job.file.filename} is not a GGUF model file (it does not "
            "start with 'GGUF'); nothing was downloaded"
        )


def _write(out: Any, chunk: bytes, job: Partial) -> None:
    try:
        out.write(chunk)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(
                f"the disk filled up while downloading {job.file.filename} into "
                f"{job.part.parent.parent}; the partial file was deleted — free some space "
                "and start again"
            ) from exc
        raise
