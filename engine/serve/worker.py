"""The one thread of Hearth's local server that drives the backend, and the jobs it runs.

Owns running API requests on the backend's one thread (the engine owns its model there):
on the ONNX fast path with a plain architecture, up to ``BATCH_SLOTS`` requests run at once,
joining and leaving a continuous batch at token boundaries (`engine.serve.batch`), the batch
advancing one round per task on the executor so the app's own generations still get their
turn; other backends and requests the batch does not take (beams, tools, structured output,
harmony models) run one at a time in arrival order. Jobs carry their client's key
(`client_key`: the peer address and API key) so the batch admits clients in turn. Also owns
cancelling jobs (a job whose client left is skipped or stopped at the next token), and fitting
each request to the model: a prompt over the context window is refused,
and ``max_tokens`` is clamped to the room the prompt leaves (a client's 10^13 must not become
a 10^13-token buffer). Does not own sockets or the wire format (`engine.serve.server`,
`engine.serve.schema`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from engine import settings
from engine.errors import ContextOverflowError, EngineError, InvalidParamsError
from engine.runners.batched import BatchedDecoder, batch_refusal
from engine.serve import schema
from engine.types import Backend, GenerationRequest

if TYPE_CHECKING:  # the batch needs numpy and a runner: imported when a local runner is there
    from engine.serve.batch import BatchScheduler

END = object()  # sentinel: the worker has finished a job
T = TypeVar("T")


BATCH_SLOTS = 8  # requests decoding together; more wait in line (HEARTH_BATCH_SLOTS overrides)


@dataclass(eq=False)  # identity hashing: jobs live in a set
class Job:
    request: schema.ApiRequest
    cancel: threading.Event
    events: queue.Queue[object]
    ended: Callable[[Job], None] = lambda _job: None
    client: str = ""  # whose request (`client_key`): the batch serves clients in turn

    def emit(self, item: object) -> None:
        self.events.put(item)

    def end(self) -> None:
        self.ended(self)
        self.events.put(END)


class EngineWorker:
    """The one thread that touches the backend (see the module docstring).

    By default the worker owns a single-thread executor. The app passes its own engine
    executor instead, so the chat window and API clients take turns on the same thread.
    ``slots`` caps the batch (1: strictly one request at a time, as before batching).
    """

    def __init__(
        self, backend: Backend, executor: Executor | None = None, slots: int | None = None
    ) -> None:
        self.backend = backend
        self._owned = executor is None
        self._executor = executor or ThreadPoolExecutor(1, thread_name_prefix="hearth-server")
        self._lock = threading.Lock()
        self._live: set[Job] = set()  # submitted and not yet ended
        self.slots = slots or _slots_from_env()
        self._batch: BatchScheduler | None = None  # made on the engine thread, when first used
        self._batch_refusal: str | None = None  # why requests run one at a time ("" batching)
        self._stopped = False

    @property
    def batching(self) -> str:
        """Why requests run one at a time; empty when they are batched."""
        return self._batch_refusal if self._batch_refusal is not None else "not yet known"

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` run on the engine thread, waited for (a moderation check: a local guard
        lives on that thread, as the model does)."""
        return self._executor.submit(fn).result()

    def submit(self, request: schema.ApiRequest, client: str = "") -> Job:
        job = Job(request, threading.Event(), queue.Queue(), self._ended, client)
        with self._lock:
            self._live.add(job)
        self._executor.submit(self._route, job)
        return job

    def _ended(self, job: Job) -> None:
        with self._lock:
            self._live.discard(job)

    def _route(self, job: Job) -> None:
        """On the engine thread: into the batch when it takes the request, else run it now."""
        if self._stopped:
            job.end()
            return
        try:
            batch = self._scheduler(job.request.generation)
        except Exception as exc:  # the batch could not be set up: run it the old way
            self._batch_refusal, batch = f"batching failed to start: {exc}", None
        if batch is None or not self._fits_batch(job, batch.decoder.context_window):
            self._run(job)
            return
        batch.add(job, job.request.generation, job.client)
        with self._lock:  # one round queued per batch (an unload may have replaced the batch)
            start, batch.pumping = not batch.pumping, True
        if start:
            self._pump(batch)

    def _fits_batch(self, job: Job, longest: int) -> bool:
        """Whether the prompt and the longest reply fit a batch slot (else it runs alone)."""
        try:
            generation = self._fit(job.request.generation)
        except Exception:
            return False  # the lone run reports the error
        count = self.backend.count_tokens(generation.messages)
        return count + generation.params.max_new_tokens <= longest

    def _pump(self, batch: BatchScheduler) -> None:
        """One round of the batch, then queue the next behind whatever else waits."""
        touch = getattr(self.backend, "touch", None)  # batched requests count as use (idle unload)
        if touch is not None:
            touch()
        try:
            batch.step()
        except Exception as exc:  # a bug, not a bad request: every client hears of it
            batch.fail_all(exc)
        with self._lock:
            batch.pumping = batch.busy()
            if not batch.pumping:
                return
        try:
            self._executor.submit(self._pump, batch)
        except RuntimeError:  # the executor is shutting down: the server is stopping
            batch.fail_all(RuntimeError("the server is stopping"))

    def _scheduler(self, request: GenerationRequest) -> BatchScheduler | None:
        """The batch over the backend's current runner (a reloaded model gets a new one), or
        None when ``request`` runs alone."""
        runner = getattr(self.backend, "runner", None)
        if runner is None or self.slots < 2:
            self._batch_refusal = "the backend has no local runner" if runner is None else (
                "batching is off (one slot)"
            )  # fmt: skip
            return None
        from engine.serve.batch import RESERVED_SLOTS, BatchScheduler, batchable

        backend: Any = self.backend
        if not batchable(request, backend.tokenizer):
            return None
        if self._batch is not None and self._batch.decoder.runner is runner:
            return self._batch
        if self._batch is not None and self._batch.busy():
            return None  # the model changed under a running batch: finish it first
        self._batch = None
        self._batch_refusal = batch_refusal(runner)
        if self._batch_refusal:
            return None
        # one slot more than a client may hold: another client's request is admitted at once
        decoder = BatchedDecoder(runner, self.slots + RESERVED_SLOTS)
        self._batch = BatchScheduler(decoder, backend.tokenizer, backend.eos_ids, self._fit)
        listeners = getattr(backend, "unload_listeners", None)
        if listeners is not None and self._drop_batch not in listeners:
            listeners.append(self._drop_batch)  # an idle unload must free the slots' K/V too
        return self._batch

    def _drop_batch(self) -> None:
        """The engine unloaded its model (on the engine thread): let go of the runner and the
        slots' K/V; the next request builds a new batch over the reloaded runner."""
        batch, self._batch = self._batch, None
        if batch is not None and batch.busy():
            batch.fail_all(EngineError("the model was unloaded"))

    def live_jobs(self) -> int:
        """How many jobs are queued or running (0 once every client has been answered)."""
        with self._lock:
            return len(self._live)

    def stop(self) -> None:
        """Cancel every queued or running job; wait for our own thread to finish. Lets go of
        the batch (its K/V), also when the engine and its thread live on (the app's toggle)."""
        with self._lock:
            self._stopped = True
            for job in self._live:
                job.cancel.set()
        listeners = getattr(self.backend, "unload_listeners", None)
        if listeners is not None and self._drop_batch in listeners:
            listeners.remove(self._drop_batch)
        self._batch = None  # a round still queued holds its own reference and ends it
        if self._owned:
            self._executor.shutdown(wait=True)

    def _run(self, job: Job) -> None:
        try:
            if not job.cancel.is_set():  # its client left while it waited in the queue
                generation = self._fit(job.request.generation)
                for event in self.backend.generate(generation, job.cancel):
                    job.emit(event)
        except Exception as exc:  # report to the handler; the worker keeps serving
            job.emit(exc)
        finally:
            job.end()

    def _fit(self, generation: GenerationRequest) -> GenerationRequest:
        # An API client expects a 400 for a prompt that does not fit, not silently dropped turns.
        window = self.backend.info.context_window
        if not window:
            return generation
        count = self.backend.count_tokens(generation.messages)
        if count >= window:
            raise ContextOverflowError(
                f"the prompt is {count} tokens; this model's context window is {window} tokens"
            )
        # No reply outgrows what the window leaves after the prompt (generation stops when it
        # is full), so a larger max_tokens only asks the engine for memory it cannot use.
        room = window - count
        if generation.params.max_new_tokens <= room:
            return generation
        params = dataclasses.replace(generation.params, max_new_tokens=room)
        return dataclasses.replace(generation, params=params)


def client_key(peer: str, authorization: str | None) -> str:
    """Whose request this is, for the batch's turns: the peer address, and the API key sent
    (hashed: the key itself is not kept), so clients behind one address with their own keys
    take turns too. Connections are not clients: 8 connections from one peer are one client."""
    if not authorization:
        return peer
    return f"{peer} {hashlib.sha256(authorization.encode()).hexdigest()[:12]}"


def _slots_from_env() -> int:
    value = settings.BATCH_SLOTS.raw() or str(BATCH_SLOTS)
    if not value.strip().isdigit() or int(value) < 1:
        raise InvalidParamsError(f"HEARTH_BATCH_SLOTS must be a whole number >= 1, got {value!r}")
    return int(value)
