"""The models dialog's calls into `engine.hub`, each run off the GUI thread.

Every function here is a coroutine that runs one blocking `engine.hub` call on a worker thread
(``asyncio.to_thread``) with the endpoint and token from `HubAccess`, so the dialog never
freezes on the network or on parsing headers. Results are the engine's own frozen values
(`HubFile`, `ModelSummary`, `Fit`, ...); errors are its typed `HubError`s. Does not own what
the calls do (`engine.hub`) or how results are shown (`app.views.models.dialog`).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from app.hub.downloads import HubAccess


async def catalogue() -> list[Any]:
    from engine.hub.catalogue import load_catalogue

    return await asyncio.to_thread(load_catalogue)


async def repo_files(repo_id: str, access: HubAccess) -> list[Any]:
    from engine.hub.search import list_gguf_files

    return await asyncio.to_thread(list_gguf_files, repo_id, **access.kwargs())


async def repo_listing(repo_id: str, access: HubAccess) -> Any:
    """The repo's model files and, apart from them, its vision projectors (`RepoGguf`)."""
    from engine.hub.search import list_repo_ggufs

    return await asyncio.to_thread(list_repo_ggufs, repo_id, **access.kwargs())


async def search(query: str, access: HubAccess, limit: int = 30) -> list[Any]:
    from engine.hub.search import search_repos

    return await asyncio.to_thread(search_repos, query, limit=limit, **access.kwargs())


async def remote_summary(file: Any, access: HubAccess) -> Any:
    """The file's `ModelSummary` from its header alone (HTTP range requests)."""
    from engine.hub.remote_header import summarize_url
    from engine.hub.transport import file_url

    url = file_url(file.repo_id, file.filename, endpoint=access.endpoint)
    return await asyncio.to_thread(summarize_url, url, **access.kwargs())


async def assess(summary: Any) -> Any:
    from engine.hub.fit import assess as assess_summary

    return await asyncio.to_thread(assess_summary, summary)


async def local_models(in_use: str = "") -> list[Any]:
    """The models on this computer, and ``in_use`` (the loaded model's file) when it lies
    outside every folder listed (the bundled model, a file opened from elsewhere)."""
    from engine.hub.library import list_models

    def listing() -> list[Any]:
        models = list_models()
        if in_use.endswith(".gguf") and not any(_same(m.path, in_use) for m in models):
            from engine.hub.summary import summarize_file

            # The list must show even if the loaded file went away meanwhile.
            with contextlib.suppress(Exception):
                models.insert(0, summarize_file(Path(in_use), source="in use"))
        return models

    return await asyncio.to_thread(listing)


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


async def pending() -> list[Any]:
    from engine.hub.download import pending_downloads

    return await asyncio.to_thread(pending_downloads)


def guard_models() -> list[Any]:
    """The catalogue's guard models (its "Safety" section); quick: one small file read."""
    from engine.hub.guard_models import load_guard_models

    return load_guard_models()


def downloaded_guards() -> list[tuple[Any, Path]]:
    """The guard models whose files are on disk, with their paths (a few ``stat`` calls)."""
    from engine.hub.guard_models import downloaded_guards as on_disk

    return on_disk()


def guard_file(guard: Any) -> Any:
    from engine.hub.guard_models import hub_file

    return hub_file(guard)


def guards_dir() -> Path:
    from engine.hub.guard_models import guards_dir as folder

    return folder()


def models_dir() -> Path:
    from engine.hub.library import models_dir as folder

    return folder()


def delete_model(path: str) -> list[Path]:
    """Delete a model in Hearth's folder (the engine refuses any other path), with its vision
    projector when no other model uses it; the files deleted. Quick: on the GUI thread, so
    the confirmation and the refreshed list follow each other."""
    from engine.hub.library import delete_model as delete

    return delete(Path(path))


def touch_last_used(path: str) -> None:
    from engine.hub.library import touch_last_used as touch

    touch(Path(path))
