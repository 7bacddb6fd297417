"""EngineBridge and DbWorker: events cross from worker threads into asyncio intact and in order;
failures arrive as values; leaving a stream early cancels the worker; loading reports progress."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.bridge import DbWorker, EngineBridge, Failed, local_engine_factory
from engine.errors import ContextOverflowError, ModelNotFoundError
from engine.types import (
    Backend,
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    PromptPrepared,
    SamplingParams,
    TextDelta,
)
from tests.app.conftest import GatedBackend

REQUEST = GenerationRequest(
    (Message("user", "Say something"),),
    SamplingParams(temperature=0.0, max_new_tokens=12),
    conversation_id="bridge-test",
)


class _Exploding(GatedBackend):
    """Yields the real engine's first events, then fails the way a backend can mid-stream."""

    def generate(
        self, request: GenerationRequest, cancel: Any = None, live: LiveParams | None = None
    ) -> Iterator[Event]:
        for event in self.inner.generate(request, cancel, live):
            yield event
            if isinstance(event, TextDelta):
                raise ContextOverflowError("the context is full")


async def _collect(bridge: EngineBridge, request: GenerationRequest = REQUEST) -> list[Any]:
    return [e async for e in bridge.stream(request, threading.Event(), LiveParams(request.params))]


@pytest.fixture
def bridge(tiny_engine: Backend) -> Iterator[EngineBridge]:
    b = EngineBridge()
    b.attach(tiny_engine)
    yield b
    b.detach()
    b.close_blocking()


def test_stream_delivers_every_event_in_order(bridge: EngineBridge, run: Any) -> None:
    events = run(_collect(bridge))
    assert isinstance(events[0], PromptPrepared)
    assert isinstance(events[-1], Finished)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == events[-1].text
    assert [d.token_index for d in deltas] == sorted(d.token_index for d in deltas)


def test_the_engine_runs_on_one_worker_thread_never_the_loop(
    tiny_engine: Backend, run: Any
) -> None:
    seen: list[str] = []

    class Recording(GatedBackend):
        def generate(self, *args: Any, **kw: Any) -> Iterator[Event]:
            seen.append(threading.current_thread().name)
            yield from self.inner.generate(*args, **kw)

    b = EngineBridge()
    b.attach(Recording(tiny_engine))
    try:
        run(_collect(b))
        run(_collect(b))
    finally:
        b.detach()
        b.close_blocking()
    assert len(set(seen)) == 1 and seen[0].startswith("hearth-engine")
    assert seen[0] != threading.current_thread().name


def test_an_exception_mid_stream_becomes_a_failed_event(tiny_engine: Backend, run: Any) -> None:
    b = EngineBridge()
    b.attach(_Exploding(tiny_engine))
    try:
        events = run(_collect(b))
    finally:
        b.detach()
        b.close_blocking()
    assert isinstance(events[-1], Failed)
    assert isinstance(events[-1].error, ContextOverflowError)
    assert any(isinstance(e, TextDelta) for e in events)


def test_leaving_a_stream_early_cancels_the_worker(bridge: EngineBridge, run: Any) -> None:
    long = GenerationRequest(REQUEST.messages, REQUEST.params.replace(max_new_tokens=400))
    cancel = threading.Event()

    async def first_delta() -> None:
        async for event in bridge.stream(long, cancel):
            if isinstance(event, TextDelta):
                break

    run(first_delta())
    assert cancel.is_set()
    events = run(_collect(bridge))  # the engine is free again
    assert events[-1].reason in (FinishReason.STOP, FinishReason.LENGTH)


def test_loading_a_missing_model_raises_and_reports_progress(run: Any, tmp_path: Path) -> None:
    b = EngineBridge()
    progress: list[Any] = []
    with pytest.raises(ModelNotFoundError):
        run(b.load(local_engine_factory(str(tmp_path / "nothing-here")), progress.append))
    assert b.backend is None
    b.close_blocking()


def test_db_worker_runs_calls_in_order_on_its_own_thread(run: Any) -> None:
    db = DbWorker()
    db.open_blocking(list)
    names: list[str] = []

    def record(store: list[int], value: int) -> int:
        names.append(threading.current_thread().name)
        store.append(value)
        return len(store)

    for i in range(5):
        db.submit(record, i)
    assert run(db.call(record, 5)) == 6
    assert db.call_blocking(lambda store: list(store)) == [0, 1, 2, 3, 4, 5]
    assert set(names) == {names[0]} and names[0].startswith("hearth-db")
    db.close_blocking()
