"""What the app builds backends and embedders with: factories run on the engine thread.

Owns `BackendFactory` and its two makers, the in-process `engine.engine.Engine` for a model
(`local_engine_factory`, with prompt-lookup speculation on) and an OpenAI-compatible endpoint
(`remote_engine_factory`, probed so a bad one fails when chosen); listing an endpoint's models
off the GUI thread; and opening an embedding model for document retrieval. The heavy engine
modules are imported inside the factories, on the thread that builds. Does not own running a
backend (`app.bridge.engine_bridge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.types import Backend, LoadProgress

BackendFactory = Callable[[Callable[[LoadProgress], None]], Backend]


def local_engine_factory(model: str, **options: Any) -> BackendFactory:
    """A factory that builds the in-process `Engine` for ``model`` ("bundled", folder, .gguf)."""

    def build(progress: Callable[[LoadProgress], None]) -> Backend:
        from engine.engine import Engine  # heavy (torch): imported on the engine thread only

        # prompt lookup on every reply (greedy or sampled, the same tokens for a seed: exact on
        # every path); it stops itself per reply where drafts do not pay (engine.speculative),
        # so quoting replies gain and chat does not lose
        return Engine(model, progress=progress, **{"speculative": True, **options})

    return build


def remote_engine_factory(
    base_url: str, model: str, api_key: Callable[[], str | None], kind: str | None
) -> BackendFactory:
    """A factory for an OpenAI-compatible endpoint; ``api_key`` is read on the worker (the
    keyring may block), and the endpoint is probed so a bad one fails when chosen."""

    def build(progress: Callable[[LoadProgress], None]) -> Backend:
        from engine.remote.backend import RemoteEngine

        progress(LoadProgress("resolve", None, f"Connecting to {base_url}"))
        engine = RemoteEngine(base_url, model, api_key(), kind=kind)
        engine.probe()
        return engine

    return build


async def list_remote_models(base_url: str, api_key: str | None) -> list[str]:
    """Model ids an endpoint offers (for the endpoints dialog), fetched off the GUI thread."""
    from engine.remote.backend import list_models

    loop = asyncio.get_running_loop()
    models = await loop.run_in_executor(None, lambda: list_models(base_url, api_key))
    return [m.id for m in models]


def open_embedder(model: str, *, max_tokens: int = 512) -> Any:
    """The embedding model ``model`` (.gguf path or folder) for `app.documents` retrieval: an
    `app.documents.Embedder` (``name``, ``dim``, ``embed(texts, query=...)``). Blocking and
    heavy (torch): call it on the thread that will embed (the indexing worker), never the GUI's.
    It is separate from the chat model, so indexing never queues behind a reply."""
    from engine.embed.embedder import load_embedder

    return load_embedder(model, max_tokens=max_tokens)
