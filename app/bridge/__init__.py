"""Where worker threads meet the asyncio/Qt event loop: the engine thread and the database thread.

This package is the ONLY part of the app that imports the engine runtime (import-linter's
contracts in pyproject.toml hold the rest of app/ to `engine.types`, `engine.errors`,
`engine.settings` and `engine.hub`). Its modules, by concept:
- `app.bridge.engine_bridge`: `EngineBridge`, one backend on the engine thread, its events
  streamed into asyncio (``Failed`` for an exception), the local API server over it, and the
  safety review a generation goes through;
- `app.bridge.factories`: `BackendFactory`, the local engine and remote endpoint factories,
  an endpoint's model list, the embedding model for document retrieval;
- `app.bridge.safety`: the review for a chat's `SafetyConfig`, and checking a blocklist;
- `app.bridge.queries`: a text's language, the decode thread governor's reading;
- `app.bridge.db_worker`: `DbWorker`, every store call on the database thread.
The names below are re-exported so the app imports them from ``app.bridge``. Does not own any
UI state, the conversation tree or the store schema.
"""

from __future__ import annotations

from app.bridge.db_worker import DbWorker
from app.bridge.engine_bridge import LOOPBACK, EngineBridge, Failed, StreamEvent
from app.bridge.factories import (
    BackendFactory,
    list_remote_models,
    local_engine_factory,
    open_embedder,
    remote_engine_factory,
)
from app.bridge.queries import governor_reading, language_of
from app.bridge.safety import blocklist_problem

__all__ = [
    "LOOPBACK",
    "BackendFactory",
    "DbWorker",
    "EngineBridge",
    "Failed",
    "StreamEvent",
    "blocklist_problem",
    "governor_reading",
    "language_of",
    "list_remote_models",
    "local_engine_factory",
    "open_embedder",
    "remote_engine_factory",
]
