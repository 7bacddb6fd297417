"""Where worker threads meet the asyncio/Qt event loop: the engine thread and the database thread.

Owns two single-worker executors: one for the model owner (the engine: model, tokenizer and
KV cache live on that thread only) and one for SQLite (the store's connection lives on that
thread only). Values cross back to the GUI thread with ``loop.call_soon_threadsafe``; no QObject
is touched from a worker. Also owns the optional local API server (`engine.serve.server`) over the
loaded local engine: its requests run on the same engine thread, queued with the chat's. With a
chat's `SafetyConfig`, a generation goes through the engine's safety review (`engine.safety`):
its guard model, when local, is opened on the engine thread beside the chat model and kept
until the configuration changes. This is the ONLY app module that imports the engine runtime.

Does not own any UI state, the conversation tree or the store schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from engine.errors import EngineClosedError, EngineError
from engine.kernels.governor import latest_snapshot
from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard, UnavailableGuard
from engine.safety.language import detect_language
from engine.safety.review import (
    SAFETY_SYSTEM_PROMPT,
    SafetyOptions,
    SafetyReview,
    overlap_helps,
)
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
BackendFactory = Callable[[Callable[[LoadProgress], None]], Backend]


def local_engine_factory(model: str, **options: Any) -> BackendFactory:
    """A factory that builds the in-process `Engine` for ``model`` ("bundled", folder, .gguf)."""

    def build(progress: Callable[[LoadProgress], None]) -> Backend:
        from engine.engine import Engine  # heavy (torch): imported on the engine thread only

        # prompt lookup on greedy replies: exact on every path, and it stops itself per reply
        # where drafts do not pay (engine.speculative), so quoting replies gain and chat not lose
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
        review = _open_review(config)
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


def language_of(text: str) -> str:
    """The BCP 47 tag of ``text``'s language and script ("zh-Hant", "en", "und"), for Chinese
    replies that follow their question (`engine.safety.language`; no model, no I/O)."""
    return detect_language(text).tag


def governor_reading() -> tuple[int, int, int] | None:
    """What the decode thread governor measured: (cores, threads it settled on, slowdowns
    seen), for "Why is this slow?"; None when no governor runs (`engine.kernels.governor`)."""
    snap = latest_snapshot()
    return None if snap is None else (snap.cores, snap.threads, snap.slowdowns)


def blocklist_problem(text: str) -> str | None:
    """Why a blocklist cannot be used (one line, naming the entry), or None: the engine's own
    parser, for the Preferences to check before saving."""
    try:
        Blocklist.parse(text)
    except EngineError as exc:
        return str(exc)
    return None


def _open_review(config: SafetyConfig) -> SafetyReview:
    """The engine's review for ``config``. A bad blocklist raises InvalidParamsError (the
    reply fails with it); a guard that does not open is a guard that is down."""
    options = SafetyOptions(
        strict=config.strict,
        required=config.required,
        system_prompt=SAFETY_SYSTEM_PROMPT if config.system_prompt else "",
        overlap=overlap_helps(),  # the guard checks beside the reply, given cores to spare
    )
    blocklist = Blocklist.parse(config.blocklist)
    name, url = config.guard_model.strip(), config.guard_base_url.strip()
    if not name:
        return SafetyReview(None, blocklist, options)
    if url:  # no key: a guard endpoint is expected on this machine or the local network
        factory = remote_engine_factory(url, name, lambda: None, None)
    else:
        factory = local_engine_factory(name)
    try:
        guard = Guard(factory(lambda _progress: None), f"{name} at {url}" if url else name)
    except EngineError as exc:  # a file that does not open, an endpoint that does not answer
        guard = UnavailableGuard(name, str(exc))
    return SafetyReview(guard, blocklist, options)


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
