"""The engine thread: one `Backend` on a dedicated worker, its events streamed into asyncio.

Owns `EngineBridge`: a single-worker executor for the model owner (the engine: model,
tokenizer and KV cache live on that thread only), values crossing back to the GUI thread with
``loop.call_soon_threadsafe`` (no QObject is touched from a worker); the optional local API
server (`engine.serve.server`) over the loaded local engine, its requests queued on the same
thread with the chat's; and, with a chat's `SafetyConfig`, the safety review a generation goes
through (its guard opened on the engine thread by `app.bridge.safety` and kept until the
configuration changes). Does not own building backends (`app.bridge.factories`) or any UI
state.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from app.bridge.factories import BackendFactory
from app.bridge.safety import open_review
from engine.errors import EngineClosedError, EngineError
from engine.safety.review import SafetyReview
from engine.types import (
    Backend,
    Event,
    GenerationRequest,
    LiveParams,
    LoadProgress,
    Message,
    ModelInfo,
)

if TYPE_CHECKING:
    from app.chat.safety_config import SafetyConfig

T = TypeVar("T")

_SENTINEL = object()
LOOPBACK = "127.0.0.1"  # the app's server never binds beyond this machine (no key to ask for)


@dataclass(frozen=True, slots=True)
class Failed:
    """The generation raised instead of finishing; ``error`` is the exception."""

    error: BaseException


StreamEvent = Event | Failed


class EngineBridge:
    """Runs one `Backend` on a dedicated thread and streams its events into asyncio.

    Every call into the backend (load, generate, count_tokens, close) runs on the same worker
    thread, so the engine never needs a lock of its own.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-engine")
        self._backend: Backend | None = None
        self._closed = False
        self._server: Any = None  # engine.serve.server.ServerHandle while serving
        self._served: Backend | None = None  # the backend that server drives
        self._server_lock = asyncio.Lock()  # one start/stop at a time (toggle spam, loads)
        self._review: tuple[SafetyConfig, SafetyReview] | None = None  # engine thread only

    @property
    def backend(self) -> Backend | None:
        return self._backend

    @property
    def info(self) -> ModelInfo | None:
        return self._backend.info if self._backend is not None else None

    async def load(
        self, factory: BackendFactory, progress: Callable[[LoadProgress], None] | None = None
    ) -> ModelInfo:
        """Build a backend on the engine thread (closing the previous one); return its info.

        ``progress`` is called on the event-loop thread. Raises whatever the factory raises
        (ModelLoadError and friends); the old backend is already closed by then.
        """
        await self.stop_server()  # never close a backend that the server still drives
        loop = asyncio.get_running_loop()

        def report(p: LoadProgress) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, p)

        # Forget the old backend now, not when the worker gets to it: meanwhile nothing (a
        # send, the server toggle) may reach a backend that is being closed.
        old, self._backend = self._backend, None

        def work() -> Backend:
            if old is not None:
                old.close()
            return factory(report)

        backend = await self._run(work)
        self._backend = backend
        return backend.info

    def attach(self, backend: Backend) -> None:
        """Use an already built backend (tests, a remote endpoint built elsewhere)."""
        self._backend = backend

    def detach(self) -> Backend | None:
        """Forget the backend without closing it (its owner closes it)."""
        backend, self._backend = self._backend, None
        return backend

    async def stream(
        self,
        request: GenerationRequest,
        cancel: threading.Event,
        live: LiveParams | None = None,
        safety: SafetyConfig | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Yield the backend's events for ``request``; an exception arrives as `Failed`.

        Setting ``cancel`` stops the worker at the next token; the stream then ends with the
        backend's ``Finished(CANCELLED)``. Leaving the ``async for`` early also cancels.
        With ``safety``, the question and the reply are reviewed (`engine.safety.review`).
        """
        backend = self._require_backend()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()

        def push(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                if safety is None:
                    events = backend.generate(request, cancel, live)
                else:
                    review = self._review_for(safety)
                    events = review.review(request, lambda r: backend.generate(r, cancel, live))
                for event in events:
                    push(event)
            except BaseException as exc:
                push(Failed(exc))
            finally:
                push(_SENTINEL)

        future = self._executor.submit(work)
        try:
            while (item := await queue.get()) is not _SENTINEL:
                yield item  # type: ignore[misc]
            settle = getattr(backend, "settle", None)
            if settle is not None:  # while the user reads: the next turn reuses the reply
                self._executor.submit(settle)
        finally:
            # No await here (a generator closed by the garbage collector cannot await): the
            # worker stops at its next token, and the single-worker executor runs the next
            # request only after this one has unwound.
            if not future.done():
                cancel.set()

    async def count_tokens(self, messages: tuple[Message, ...]) -> int:
        backend = self._require_backend()
        return await self._run(lambda: backend.count_tokens(messages))

    async def close(self, timeout_s: float = 5.0) -> bool:
        """Close the backend on its own thread and stop the worker.

        Returns False when the worker did not finish within ``timeout_s`` (a model still
        loading cannot be interrupted): the caller may then exit without waiting for it.
        """
        if self._closed:
            return True
        await self.stop_server()
        self._closed = True
        done = True
        try:
            close = self._run(self._close_backend_on_worker, allow_closed=True)
            await asyncio.wait_for(close, timeout_s)
        except TimeoutError:
            done = False
        except Exception:  # a backend failing to close must not block exit
            pass
        self._executor.shutdown(wait=False, cancel_futures=True)
        return done

    def close_blocking(self) -> None:
        """Close from outside any event loop (application exit after the loop stopped)."""
        if self._closed:
            return
        self._closed = True
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.stop()
        with contextlib.suppress(Exception):
            self._executor.submit(self._close_backend_on_worker).result(timeout=10)
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- local API server -------------------------------------------------------------------
    @property
    def server_url(self) -> str | None:
        """``http://127.0.0.1:PORT/v1`` while the local API server runs, else None."""
        return self._server.url if self._server is not None else None

    @property
    def can_serve(self) -> bool:
        """A local engine is loaded: a remote endpoint is never re-served (its key would leak
        to every process on this machine, and its users can reach it directly anyway)."""
        info = self.info
        return info is not None and info.backend != "remote" and not self._closed

    async def start_server(self, port: int) -> str:
        """Serve the loaded local engine on loopback ``port``; return its URL.

        Requests run on this bridge's engine thread, so API clients and the chat window take
        turns on the one model. Idempotent for the same backend and port. Raises
        InvalidParamsError when the port is taken, EngineError when no local model is loaded.
        """
        async with self._server_lock:
            backend = self._require_backend()
            if not self.can_serve:
                raise EngineError("the local API server serves a local model only; load one")
            current = self._server
            if current is not None and current.port == port and self._served is backend:
                return str(current.url)
            await self._stop_server_locked()
            from engine.serve.server import serve_in_thread

            def start() -> Any:
                return serve_in_thread(backend, LOOPBACK, port, None, executor=self._executor)

            self._server = await asyncio.get_running_loop().run_in_executor(None, start)
            self._served = backend
            return str(self._server.url)

    async def stop_server(self) -> None:
        """Stop the local API server (if any) and release its port, off the event loop thread
        (stopping waits for the accept loop to notice, about half a second)."""
        async with self._server_lock:
            await self._stop_server_locked()

    async def _stop_server_locked(self) -> None:
        server, self._server, self._served = self._server, None, None
        if server is not None:
            await asyncio.get_running_loop().run_in_executor(None, server.stop)

    def save_caches_soon(self) -> None:
        """The user left a chat: its KV cache is written to disk on the engine thread, after
        whatever runs there now (fire and forget; a local engine with saving on only)."""
        save = getattr(self._backend, "save_caches", None)
        if save is not None and not self._closed:
            self._executor.submit(save, False)

    async def unload_if_idle(self, idle_s: float) -> bool:
        """Unload the local model when it was not used for ``idle_s`` seconds (its memory goes
        back to the system; the next message, or API request, reloads it and waits for that).
        Returns whether it was unloaded now. A remote endpoint has nothing to unload."""
        backend = self._backend
        unload = getattr(backend, "unload_if_idle", None)
        if backend is None or unload is None or self._closed:
            return False
        return bool(await self._run(lambda: unload(idle_s)))

    def _close_backend_on_worker(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()
        self._close_review()

    def _review_for(self, config: SafetyConfig) -> SafetyReview:
        """On the engine thread: the review for ``config``, its guard opened once."""
        if self._review is not None and self._review[0] == config:
            return self._review[1]
        self._close_review()
        review = open_review(config)
        self._review = (config, review)
        return review

    def _close_review(self) -> None:
        held, self._review = self._review, None
        if held is not None:
            with contextlib.suppress(Exception):
                held[1].close()

    def _require_backend(self) -> Backend:
        if self._closed:
            raise EngineClosedError("the engine has been shut down")
        if self._backend is None:
            raise EngineError("no model is loaded yet")
        return self._backend

    async def _run(self, fn: Callable[[], T], *, allow_closed: bool = False) -> T:
        if self._closed and not allow_closed:
            raise EngineClosedError("the engine has been shut down")
        return await asyncio.wrap_future(self._executor.submit(fn))
