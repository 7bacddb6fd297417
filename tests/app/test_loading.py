"""The app while a model opens (issue 18.3/18.6): a message sent meanwhile waits and is sent
when the model is ready; cancelling or a failed load keeps its text; the conversations, search
and export work; the progress display names the step, never goes back within one, is busy
where nothing is measured, and says the time left.

The model is a tiny synthetic GGUF opened by the real engine in a fresh ``HEARTH_CACHE_DIR``, so
the first open really converts. "While it opens" is made deterministic by a gate: the engine
thread waits on it before the real open starts, and the test opens it when it is done.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from app.application import Application
from app.bridge import BackendFactory, local_engine_factory
from app.chat.load_progress import LoadTracker
from app.chat.session import State
from app.store import Store
from app.system.settings import Settings
from app.views.dialogs.common import EditDialog
from engine.types import Backend, LoadProgress, SamplingParams
from tests.engine.support.wrapping import WrappingBackend

GATE_TIMEOUT_S = 120  # a safety net only: every test opens its gate
SHORT = SamplingParams(temperature=0.0, seed=1, max_new_tokens=3, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("models") / "tiny-llama-Q8_0.gguf"
    write_tiny_model(path, "llama", "Q8_0")  # random weights, the bundled tokenizer: it chats
    return path


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module: the first open converts (cold), later ones reuse it (fast)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def hearth(
    qapp: Any, run: Any, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Application]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(cache_dir))
    # The last test's window and its timers are freed here, on the GUI thread: left to the
    # cyclic collector, they may be freed on the engine thread while a model loads, where Qt
    # cannot unregister their timers (a later timer event then hits freed memory).
    gc.collect()
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    app.window.resize(1100, 720)
    app.window.show()
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    app.apply_params(SHORT)
    yield app
    # Every background task (a retried load, a released send) ends before its loop closes: a
    # qasync timer left behind by a pending task fires on a deleted object later.
    run(_until(lambda: not app.session._tasks))
    run(app.shutdown())


class Gate:
    """A factory that holds the engine thread until ``open()``, then builds the real engine."""

    def __init__(self, inner: BackendFactory) -> None:
        self.inner = inner
        self.event = threading.Event()
        self.entered = threading.Event()

    def __call__(self, progress: Callable[[LoadProgress], None]) -> Backend:
        self.entered.set()
        progress(LoadProgress("resolve", None, "Finding model (held by the test)"))
        self.event.wait(GATE_TIMEOUT_S)
        return self.inner(progress)

    def open(self) -> None:
        self.event.set()


def _start_load(hearth: Application, run: Any, path: Path) -> tuple[Gate, asyncio.Task[Any]]:
    gate = Gate(local_engine_factory(str(path)))
    task = hearth.load(str(path), gate)
    run(_until(lambda: gate.entered.is_set() and hearth.session.state == State.LOADING))
    return gate, task


async def _until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.01)  # waiting for another thread, not asserting on time


def _type_and_send(hearth: Application, run: Any, text: str) -> None:
    composer = hearth.window.composer
    composer.edit.setPlainText(text)
    assert composer.button.isEnabled(), "Send must be possible while the model opens"
    composer.button.click()  # an async slot: it runs on the loop
    run(_until(lambda: hearth.session.queue.queued is not None))


def _stored(hearth: Application) -> list[Any]:
    session = hearth.session
    if session.conversation_id is None:
        return []
    return session.db.call_blocking(Store.branch, session.conversation_id)


# -- the queued message ------------------------------------------------------------------------
def test_a_message_sent_while_the_model_opens_is_sent_when_it_is_ready(
    hearth: Application, run: Any, tiny_gguf: Path, cache_dir: Path
) -> None:
    window, session = hearth.window, hearth.session
    first_open = not (cache_dir / "onnx").exists()
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    gate, task = _start_load(hearth, run, tiny_gguf)

    _type_and_send(hearth, run, "Hello before the model")
    assert session.queue.queued is not None and session.messages.rowCount() == 0
    assert window.queued_bar.isVisible()
    assert "it will be sent when ready" in window.queued_bar.label.text()
    assert window.composer.text() == "Hello before the model"  # still there, read-only
    assert window.composer.edit.isReadOnly() and not window.composer.button.isEnabled()

    gate.open()  # the real first open: tokenizer and fast path converted into the tmp cache
    assert run(task) is not None
    run(_until(lambda: bool(finished)))
    rows = session.messages.items()
    assert [r.record.role for r in rows] == ["user", "assistant"]
    assert rows[0].record.content == "Hello before the model" and rows[1].record.finish_reason
    assert _stored(hearth)[0].content == "Hello before the model"
    assert session.queue.queued is None and not window.queued_bar.isVisible()
    assert window.composer.text() == "" and not window.composer.edit.isReadOnly()
    assert any((cache_dir / "onnx").iterdir()) and first_open  # a first, converting open
    assert session.model_info is not None and session.model_info.backend == "onnx"


def test_cancelling_the_wait_keeps_the_text_and_sends_nothing(
    hearth: Application, run: Any, tiny_gguf: Path
) -> None:
    window, session = hearth.window, hearth.session
    gate, task = _start_load(hearth, run, tiny_gguf)
    _type_and_send(hearth, run, "Keep me")
    assert window.queued_bar.isVisible()

    window.queued_bar.cancel_button.click()
    assert session.queue.queued is None and not window.queued_bar.isVisible()
    assert window.composer.text() == "Keep me" and not window.composer.edit.isReadOnly()
    gate.open()
    assert run(task) is not None
    run(asyncio.sleep(0.1))
    assert session.messages.rowCount() == 0 and _stored(hearth) == []
    assert window.composer.text() == "Keep me" and window.composer.button.isEnabled()


def test_a_failed_open_keeps_the_message_with_the_error_and_retry_sends_it(
    hearth: Application, run: Any, tiny_gguf: Path, tmp_path: Path
) -> None:
    window, session = hearth.window, hearth.session
    broken = tmp_path / "model.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)  # a truncated header: the engine refuses it
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    errors: list[BaseException] = []
    session.sig_error.connect(errors.append)  # (the window shows it too, without blocking)
    gate, task = _start_load(hearth, run, broken)
    _type_and_send(hearth, run, "Do not lose me")
    gate.open()
    assert run(task) is None

    queued = session.queue.queued
    assert queued is not None and queued.failed and queued.text == "Do not lose me"
    assert errors and str(errors[0]).rstrip(".") in window.queued_bar.label.text()
    assert "Your message is kept" in window.queued_bar.label.text()
    assert window.queued_bar.retry_button.isVisible()
    assert window.composer.text() == "Do not lose me"
    assert window.composer.button.text() == "Not sent"
    assert session.messages.rowCount() == 0

    shutil.copyfile(tiny_gguf, broken)  # the user fixed the file; Retry opens it again
    window.queued_bar.retry_button.click()
    run(_until(lambda: bool(finished) or len(errors) > 1))
    assert len(errors) == 1, errors
    assert session.messages.item(0).record.content == "Do not lose me"
    assert session.queue.queued is None and window.composer.text() == ""
    boxes = window.findChildren(QMessageBox, "errorDialog")
    assert len(boxes) == 1  # the failure was also shown in the usual error dialog
    for box in boxes:
        box.close()


def test_an_edit_made_while_the_model_reopens_waits_and_cancel_returns_it_to_its_dialog(
    hearth: Application, run: Any, tiny_gguf: Path
) -> None:
    window, session = hearth.window, hearth.session
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    run(hearth.load(str(tiny_gguf), local_engine_factory(str(tiny_gguf))))
    run(session.send("first words"))
    first = session.messages.item(0)
    gate, task = _start_load(hearth, run, tiny_gguf)  # the model is opened again (a switch)

    run(session.edit(first.id, "second words"))  # the edit dialog was accepted meanwhile
    assert session.queue.queued is not None and session.queue.queued.edit_of == first.id
    assert "your edit will be sent" in window.queued_bar.label.text()
    assert not window.composer.edit.isReadOnly()  # the box is free for other text
    window.queued_bar.cancel_button.click()
    dialogs = window.findChildren(EditDialog, "editDialog")
    assert [d.text() for d in dialogs if d.isVisible()] == ["second words"]  # nothing lost
    dialogs[-1].accept()  # submitted again, still while the model opens: it waits again
    run(_until(lambda: session.queue.queued is not None))

    gate.open()
    assert run(task) is not None
    run(_until(lambda: len(finished) == 2))
    assert session.messages.item(0).record.content == "second words"
    assert session.messages.item(0).sibling_count == 2  # a branch beside the original


def test_choosing_another_model_while_one_opens_sends_to_the_latest(
    hearth: Application, run: Any, tiny_gguf: Path
) -> None:
    session = hearth.session
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    first, first_task = _start_load(hearth, run, tiny_gguf)
    second = Gate(local_engine_factory(str(tiny_gguf)))
    second_task = hearth.load(str(tiny_gguf), second)  # runs after the first, on the same thread
    _type_and_send(hearth, run, "For the second model")
    first.open()
    assert run(first_task) is None  # superseded: built, then closed by the second
    assert session.state == State.LOADING and session.queue.queued is not None
    assert not finished
    second.open()
    assert run(second_task) is not None
    run(_until(lambda: bool(finished)))
    assert session.messages.item(0).record.content == "For the second model"


# -- usable while opening ----------------------------------------------------------------------
def test_chats_search_and_export_work_while_the_model_opens(
    hearth: Application, run: Any, tiny_gguf: Path, tmp_path: Path
) -> None:
    session = hearth.session
    db = session.store_db
    for title, text in (("Apples", "green apples and pears"), ("Rivers", "the Danube is long")):
        conv = db.call_blocking(Store.create_conversation, title)
        db.call_blocking(Store.add_message, conv.id, None, "user", text)
    run(session.refresh_conversations())
    gate, task = _start_load(hearth, run, tiny_gguf)

    async def while_loading() -> list[Path]:
        await session.search("Danube")
        assert [r.title for r in session.conversations.rows()] == ["Rivers"]
        await session.search("")
        assert {r.title for r in session.conversations.rows()} == {"Apples", "Rivers"}
        apples = next(r.id for r in session.conversations.rows() if r.title == "Apples")
        await session.open_conversation(apples)
        assert session.messages.item(0).record.content == "green apples and pears"
        await session.on_rename_requested(apples, "Fruit")
        written = await hearth.export("markdown", True, tmp_path / "out")
        await session.open_conversation(None)  # a new chat
        return written

    written = run(while_loading())
    assert session.state == State.LOADING and not gate.event.is_set()  # all of it while loading
    assert len(written) == 2 and any("Fruit" in p.read_text(encoding="utf-8") for p in written)
    assert hearth.window.sidebar.search.isEnabled() and hearth.window.sidebar.list.isEnabled()
    gate.open()
    assert run(task) is not None


# -- progress ----------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# What the engine reports on a cold open of a GGUF (recorded), plus a report that goes back.
COLD_OPEN = [
    (0.00, LoadProgress("resolve", None, "Finding model 'tiny.gguf'")),
    (0.06, LoadProgress("convert", 0.0, "Reading the tokenizer of tiny (once)")),
    (5.21, LoadProgress("convert", 0.4, "Reading the tokenizer and chat template")),
    (6.00, LoadProgress("convert", 0.3, "Reading the tokenizer and chat template")),  # back
    (9.66, LoadProgress("convert", 0.9, "Saving the tokenizer for next time")),
    (9.69, LoadProgress("convert", 1.0, "Tokenizer saved")),
    (10.17, LoadProgress("load", 0.0, "Loading tiny (float32 on cpu)")),
    (10.31, LoadProgress("convert", 0.0, "Building the fast path for tiny.gguf (once)")),
    (13.80, LoadProgress("convert", 0.475, "Repacking quantised weights (once)")),
    (13.81, LoadProgress("convert", 0.95, "Repacking quantised weights (once)")),
    (13.87, LoadProgress("convert", 1.0, "Fast path built")),
    (13.87, LoadProgress("load", None, "Loading the ONNX Runtime fast path")),
    (13.93, LoadProgress("warmup", None, "Warming up")),
    (13.95, LoadProgress("ready", 1.0, "tiny ready on cpu")),
]


def test_the_shown_fraction_never_goes_back_within_a_step_and_zero_is_busy() -> None:
    clock = Clock()
    tracker = LoadTracker(clock)
    shown = []
    for at, report in COLD_OPEN:
        clock.now = 100.0 + at
        shown.append(tracker.update(report))
    fractions = [s.fraction for s in shown]
    assert fractions == [None, None, 0.4, 0.4, 0.9, 1.0, None, None, 0.475, 0.95, 1.0,
                         None, None, 1.0]  # fmt: skip
    steps: list[list[float]] = []
    for frame in shown:
        if frame.step_elapsed_s == 0:  # a report that starts a new step (bar)
            steps.append([])
        if frame.fraction is not None:
            steps[-1].append(frame.fraction)
    assert all(values == sorted(values) for values in steps) and len(steps) == 7
    # The fast path's build is a step of its own, not "convert" held at 100%.
    assert shown[7].message.startswith("Building the fast path") and shown[7].step_elapsed_s == 0
    # The bar shows the whole open (issue 34, C5): it went 30% -> 60% -> 1% between steps.
    overall = [s.overall for s in shown]
    assert overall == sorted(overall) and overall[0] == 0.0 and overall[-1] == 1.0
    assert overall[7] == overall[6] and overall[10] > overall[7]  # a new step starts in place


def test_the_time_left_comes_from_the_engine_or_from_the_rate() -> None:
    clock = Clock()
    tracker = LoadTracker(clock)
    tracker.update(LoadProgress("convert", 0.0, "Repacking"))
    clock.now += 0.5
    assert tracker.update(LoadProgress("convert", 0.1, "Repacking")).eta_s is None  # too soon
    clock.now += 1.5
    eta = tracker.update(LoadProgress("convert", 0.2, "Repacking")).eta_s  # 0.2 in 2 s
    assert eta == pytest.approx(8.0)
    clock.now += 1.0
    assert tracker.display().eta_s == pytest.approx(7.0)  # counts down between reports
    given = tracker.update(LoadProgress("convert", 0.3, "Repacking", eta_s=20.0))
    assert given.eta_s == 20.0  # the engine's own estimate wins
    clock.now += 5.0
    assert tracker.display().eta_s == pytest.approx(15.0)


def test_the_status_bar_shows_the_step_a_busy_bar_and_the_time(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    """Reports through the real bridge into the real window, one at a time."""
    window = hearth.window
    label, bar, time_label = window.state_label, window.progress, window.load_time_label
    steps = [
        LoadProgress("convert", 0.0, "Building the fast path for tiny.gguf (once)"),
        LoadProgress("convert", 0.5, "Repacking quantised weights (once)", eta_s=12.0),
        LoadProgress("convert", 0.25, "Repacking quantised weights (once)"),  # back: held
        LoadProgress("warmup", None, "Warming up"),
    ]
    gates = [threading.Event() for _ in steps]

    def factory(progress: Callable[[LoadProgress], None]) -> Backend:
        for step, gate in zip(steps, gates, strict=True):
            progress(step)
            gate.wait(GATE_TIMEOUT_S)
        return _Kept(tiny_engine)

    reported: list[LoadProgress] = []
    hearth.session.sig_load_progress.connect(reported.append)
    task = hearth.load("tiny", factory)
    seen = []
    for i, gate in enumerate(gates):
        run(_until(lambda n=i + 1: len(reported) == n))
        seen.append((bar.minimum(), bar.maximum(), bar.value(), label.text(), time_label.text()))
        gate.set()
    assert run(task) is not None
    assert seen[0][:2] == (0, 0) and "Preparing (once)" in seen[0][3]  # busy, stage named
    assert seen[1][3] == "Preparing (once): Repacking quantised weights"  # "(once)" said once
    # One bar for the whole open (issue 34, C5): the step's half takes half the bar.
    assert seen[1][1:3] == (100, 25) and seen[1][4] in ("about 12 s left", "about 11 s left")
    assert seen[2][1:3] == (100, 25)  # never back
    assert seen[3][:3] == (0, 100, 25) and seen[3][3] == "Warming up"  # nor back to busy
    assert not bar.isVisible() and not time_label.isVisible()


class _Kept(WrappingBackend):
    """The shared tiny engine, never closed by the app; every other attribute is the engine's."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_chat_opened_before_the_model_shows_its_context_once_the_model_is_ready(
    hearth: Application, run: Any, tiny_gguf: Path
) -> None:
    """Issue 22 B: a reopened chat's context meter read 0 until the next message."""
    session = hearth.session
    db = session.store_db
    conv = db.call_blocking(Store.create_conversation, "Reopened")
    db.call_blocking(Store.add_message, conv.id, None, "user", "a question with some words")
    run(session.refresh_conversations())
    gate, task = _start_load(hearth, run, tiny_gguf)
    run(session.open_conversation(conv.id))  # as at start-up: the chat opens, the model loads
    gate.open()
    run(task)
    used = run(session.bridge.count_tokens(session.history(session.messages.rowCount())))
    assert used > 0
    label = hearth.window.context_label.text()
    assert label.startswith(f"Context {used} / "), label
