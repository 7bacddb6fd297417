"""The database thread: every store call on one dedicated thread.

Owns `DbWorker`: a single-worker executor that opens the store on its thread (SQLite
connections are thread-bound) and runs calls there, awaited on the event loop or fired and
forgotten in order. Does not own the store or its schema (`app.store`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class DbWorker:
    """Runs every store call on one dedicated thread (SQLite connections are thread-bound).

    ``open`` builds the store on that thread; ``call`` runs ``fn(store, ...)`` there and awaits
    the result on the event loop. ``submit`` fires and forgets (streaming saves), preserving order.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-db")
        self._store: Any = None

    async def open(self, factory: Callable[[], Any]) -> None:
        def build() -> None:
            self._store = factory()

        await asyncio.wrap_future(self._executor.submit(build))

    def open_blocking(self, factory: Callable[[], Any]) -> None:
        def build() -> None:
            self._store = factory()

        self._executor.submit(build).result()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.wrap_future(self._executor.submit(self._invoke, fn, args, kwargs))

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._executor.submit(self._invoke, fn, args, kwargs)

    def call_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._executor.submit(self._invoke, fn, args, kwargs).result()

    def close_blocking(self) -> None:
        def shut() -> None:
            store, self._store = self._store, None
            if store is not None and hasattr(store, "close"):
                store.close()

        with contextlib.suppress(Exception):
            self._executor.submit(shut).result(timeout=10)
        self._executor.shutdown(wait=True)

    def _invoke(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        if self._store is None:
            raise RuntimeError("the conversation store is not open")
        return fn(self._store, *args, **kwargs)
