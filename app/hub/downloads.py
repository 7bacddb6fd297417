"""One model download on a worker thread, as the dialog sees it: progress, phase, cancel.

`DownloadJob.run()` awaits `engine.hub.download.download` on a worker thread (for a model
that can see, the model and then its vision projector, `engine.hub.projectors`, with one
progress over both)
(``asyncio.to_thread``); the engine's progress callback runs on that thread and is carried to
the event loop by `ProgressRelay` (coalesced), so the callback given here always runs on the
loop's (the GUI) thread. `cancel()`
sets the ``threading.Event`` the engine checks between chunks: cancelling the asyncio task
alone would not stop the thread. The partial file is kept by the engine, so a later `run()`
(or a new job after a restart) resumes where it stopped.

Does not own HTTP, resuming, disk checks or the sha256 check (all `engine.hub.download`), nor
any widget (`app.views.models.download_dialog`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.hub.progress import ProgressRelay

# engine.hub.download.download, or a wrapper around it (tests gate its progress callback).
DownloadFn = Callable[..., Path]


@dataclass(frozen=True)
class HubAccess:
    """Where the Hub is (the app's setting: a mirror, HF_ENDPOINT or huggingface.co), the
    token from the keyring (None: the engine falls back to ``HF_TOKEN``) and the mirror origins
    the user let it go to (`app.hub.token_hosts`; huggingface.co always gets it)."""

    endpoint: str | None = None
    token: str | None = None
    token_hosts: frozenset[str] = frozenset()

    def kwargs(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "token": self.token, "token_hosts": self.token_hosts}


class DownloadJob:
    """Download one `HubFile` into the models folder; callbacks run on the event loop."""

    def __init__(
        self,
        file: Any,
        access: HubAccess,
        *,
        on_progress: Callable[[int, int], None],
        dest_dir: Path | None = None,
        download_fn: DownloadFn | None = None,
        projector: Any = None,
    ) -> None:
        self.file = file
        self.projector = projector  # a HubFile downloaded after the model, or None
        self.projector_path: Path | None = None
        self.access = access
        self._on_progress = on_progress
        self._dest_dir = dest_dir
        self._download_fn = download_fn
        self._cancel = threading.Event()
        self.running = False

    def cancel(self) -> None:
        """Ask the worker to stop at its next chunk; `run()` then raises DownloadCancelled."""
        self._cancel.set()

    async def run(self) -> Path:
        """Download (or resume), verify and move the file; return its final path."""
        loop = asyncio.get_running_loop()
        self._cancel = threading.Event()  # a resumed run starts uncancelled
        kwargs: dict[str, Any] = {
            "dest_dir": self._dest_dir,
            "progress": ProgressRelay(loop, self._on_progress),
            "cancel": self._cancel,
            **self.access.kwargs(),
        }
        fn = self._download_fn or _engine_download()
        self.running = True
        try:
            path, self.projector_path = await asyncio.to_thread(
                _with_projector, self.file, self.projector, fn, kwargs
            )
            return path
        finally:
            self.running = False


def _with_projector(
    file: Any, projector: Any, fn: DownloadFn, kwargs: dict[str, Any]
) -> tuple[Path, Path | None]:
    from engine.hub.projectors import download_with_projector

    return download_with_projector(file, projector, download_fn=fn, **kwargs)


def _engine_download() -> DownloadFn:
    from engine.hub.download import download

    return download
