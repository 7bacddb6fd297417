"""Fixtures for the GUI tests: a qasync loop on the pytest-qt QApplication, a real session over
a real SQLite file and the real engine (H2's ``tiny_engine``), and a gate that pauses the engine
thread at a chosen event so "during streaming" is deterministic rather than timed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
import qasync

from app.bridge import DbWorker, EngineBridge
from app.chat.session import ChatSession
from engine.types import (
    Backend,
)
from tests.engine.support.wrapping import WrappingBackend


@pytest.fixture
def loop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(event_loop)
    yield event_loop
    asyncio.set_event_loop(None)
    event_loop.close()  # while the QApplication lives; a loop collected later crashes qasync


@pytest.fixture
def run(loop: asyncio.AbstractEventLoop) -> Any:
    """``run(coro)`` drives ``coro`` to completion on the qasync loop and returns its result."""

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        return loop.run_until_complete(coro)

    return runner


# The app tests' name for the one wrapping fake (it pauses after the first delta once armed).
GatedBackend = WrappingBackend


@pytest.fixture
def gated(tiny_engine: Backend) -> GatedBackend:
    return GatedBackend(tiny_engine)


def make_session(run: Any, backend: Backend, db_path: Path) -> ChatSession:
    bridge = EngineBridge()
    bridge.attach(backend)
    session = ChatSession(bridge, DbWorker())
    session.model_info = backend.info
    run(session.open_store(path=db_path))
    return session


def close_session(session: ChatSession) -> None:
    session.bridge.detach()  # the engine is shared by the whole test session
    session.bridge.close_blocking()
    session.db.close_blocking()


@pytest.fixture
def session(run: Any, gated: GatedBackend, tmp_path: Path) -> Iterator[ChatSession]:
    chat = make_session(run, gated, tmp_path / "hearth.sqlite3")
    yield chat
    gated.gate.set()
    close_session(chat)
