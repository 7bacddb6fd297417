"""The one thread of Hearth's local server that drives the backend, and the jobs it runs.

Owns running API requests on the backend strictly in arrival order (the engine owns its model
on one thread), cancelling them (a job whose client left is skipped or stopped at the next
token), and fitting each request to the model: a prompt over the context window is refused,
and ``max_tokens`` is clamped to the room the prompt leaves (a client's 10^13 must not become
a 10^13-token buffer). Does not own sockets or the wire format (`engine.serve.server`,
`engine.serve.schema`).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from engine.errors import ContextOverflowError
from engine.serve import schema
from engine.types import Backend, GenerationRequest

END = object()  # sentinel: the worker has finished a job


@dataclass(eq=False)  # identity hashing: jobs live in a set
class Job:
    request: schema.ApiRequest
    cancel: threading.Event
    events: queue.Queue[object]


class EngineWorker:
    """The one thread that touches the backend. Jobs run strictly in submission order.

    By default the worker owns a single-thread executor. The app passes its own engine
    executor instead, so the chat window and API clients take turns on the same thread.
    """

    def __init__(self, backend: Backend, executor: Executor | None = None) -> None:
        self.backend = backend
        self._owned = executor is None
        self._executor = executor or ThreadPoolExecutor(1, thread_name_prefix="hearth-server")
        self._lock = threading.Lock()
        self._live: set[Job] = set()  # submitted and not yet ended

    def submit(self, request: schema.ApiRequest) -> Job:
        job = Job(request=request, cancel=threading.Event(), events=queue.Queue())
        with self._lock:
            self._live.add(job)
        self._executor.submit(self._run, job)
        return job

    def live_jobs(self) -> int:
        """How many jobs are queued or running (0 once every client has been answered)."""
        with self._lock:
            return len(self._live)

    def stop(self) -> None:
        """Cancel every queued or running job; wait for our own thread to finish."""
        with self._lock:
            for job in self._live:
                job.cancel.set()
        if self._owned:
            self._executor.shutdown(wait=True)

    def _run(self, job: Job) -> None:
        try:
            if not job.cancel.is_set():  # its client left while it waited in the queue
                generation = self._fit(job.request.generation)
                for event in self.backend.generate(generation, job.cancel):
                    job.events.put(event)
        except Exception as exc:  # report to the handler; the worker keeps serving
            job.events.put(exc)
        finally:
            with self._lock:
                self._live.discard(job)
            job.events.put(END)

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
