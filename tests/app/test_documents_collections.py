"""Collections in the chat (GPT4All's LocalDocs), through the real generation loop with a scripted
reply (`tests.engine.support.scripted`: the bundled model's tokenizer and template), real SQLite
files, real folders made here and real widgets offscreen: a folder is indexed in the background with
progress; a chat chooses it (saved with the chat, schema V7) and each question is searched in it
through the same index code as ``python -m app docs``; the reply cites collection passages that
open in context, and one whose file was deleted says so; the watcher re-indexes a changed file,
picks up a new one and drops a deleted one; the Collections window and the composer's
Collections button drive it all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.chat.collections import CollectionLibrary
from app.chat.session import ChatSession
from app.chat.sources import Source
from app.documents import IndexReport
from app.portability.export import export_conversations
from app.store import Store
from app.store.attachments import sources_for
from app.store.collections import collections_for
from app.store.organise import erase
from app.views.documents.sources_fold import SourceDialog, sources_html
from tests.app.conftest import close_session, make_session
from tests.engine.support.scripted import ScriptedBackend, ScriptedRunner
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

GUIDE = (
    "# Garden\n\n## Tulips\n\nPlant the tulips in October, ten centimetres deep.\n\n"
    "## Roses\n\nPrune the roses in March, above an outward bud.\n"
)


def _wait(run: Any, done: Callable[[], bool], what: str) -> None:
    """Let the event loop run until ``done()`` (worker callbacks arrive through it)."""

    async def until() -> None:
        for _ in range(6000):  # a safety net of ~60 s, never the expectation
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"gave up waiting: {what}")

    run(until())


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "garden"
    (folder / "notes").mkdir(parents=True)
    (folder / "guide.md").write_text(GUIDE, encoding="utf-8")
    (folder / "notes" / "soil.txt").write_text("Clay soil holds water.", encoding="utf-8")
    (folder / "junk.txt").write_bytes(bytes(range(256)) * 8)
    return folder


class Reports:
    """What the library reported, by collection, in order."""

    def __init__(self, library: CollectionLibrary) -> None:
        self.done: list[tuple[str, Any]] = []
        self.progress: list[tuple[str, int, int, str]] = []
        library.sig_done.connect(lambda name, result: self.done.append((name, result)))
        library.sig_progress.connect(lambda *p: self.progress.append(p))

    def last(self) -> IndexReport:
        report = self.done[-1][1]
        assert isinstance(report, IndexReport), report
        return report


REPLY = "Plant them in October [1]."


class ChunkedPromptRunner(ScriptedRunner):
    """A prompt longer than one prefill run (the passages make it long) is all prompt."""

    def extend(self, ids: Sequence[int], last_only: bool = False) -> Any:
        if len(ids) > 1 and self._ids and len(self._ids) == self._prompt:
            self._prompt += len(ids)
            self.prompts[-1] += list(ids)
        return super().extend(ids, last_only)


@pytest.fixture(scope="module")
def scripted() -> ScriptedBackend:
    backend = ScriptedBackend(smollm2_tokenizer(), lambda _messages: REPLY)
    backend.runner = ChunkedPromptRunner(len(backend.tokenizer))
    return backend


@pytest.fixture
def library_session(run: Any, scripted: ScriptedBackend, tmp_path: Path) -> Iterator[ChatSession]:
    session = make_session(run, scripted, tmp_path / "hearth.sqlite3")  # type: ignore[arg-type]
    session.documents.index_path = tmp_path / "documents.sqlite3"
    yield session
    session.documents.close()
    close_session(session)


def test_a_chat_searches_its_collections_and_cites_them_in_context(
    library_session: ChatSession, scripted: ScriptedBackend, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    session = library_session
    library = session.documents.library
    reports = Reports(library)
    folder = _folder(tmp_path)
    library.add("garden", folder)
    _wait(run, lambda: len(reports.done) == 1, "the folder indexed")
    report = reports.last()
    assert (report.added, len(report.skipped), report.failed) == (2, 1, [])
    assert "junk.txt: this is binary data" in report.skipped[0][1]
    assert reports.progress[0][:3] == ("garden", 0, 3) and reports.progress[-1][1:3] == (3, 3)
    infos = run(library.collections())
    assert [(i.name, i.files, i.skipped) for i in infos] == [("garden", 3, 1)]

    # Chosen before the first message: saved when the message creates the chat.
    session.documents.set_collections(["garden"])
    run(session.send("When should I plant the tulips?"))
    _user, reply = session.messages.items()
    assert reply.record.finish_reason == "stop" and reply.record.content == REPLY
    first = Source.from_dict(reply.sources[0])
    assert (first.file, first.locator, first.collection) == (
        "guide.md",
        "Garden › Tulips",
        "garden",
    )
    assert first.path == str(folder.resolve() / "guide.md") and "October" in first.text
    assert "Prune the roses" in first.after  # the text around it, from the index
    cid = session.conversation_id
    assert cid is not None
    assert session.db.call_blocking(sources_for, [reply.id])[reply.id] == reply.sources
    assert session.db.call_blocking(collections_for, cid) == ["garden"]
    # What the model read: the passage, numbered, before the question.
    prompt = scripted.prompt()
    assert "<sources>\n[1] (guide.md, Garden › Tulips)\nPlant the tulips in October" in prompt
    assert "cite it as [1]" in prompt and "When should I plant the tulips?" in prompt

    # The Sources fold names the collection; the Markdown export too.
    reply.sources_open = True
    assert "(garden)</span>" in sources_html(reply, dark=False)
    out = session.db.call_blocking(export_conversations, [cid], "markdown", tmp_path / "out")
    assert "[1] guide.md (garden), Garden › Tulips: “" in out[0].read_text(encoding="utf-8")

    # The choice is the chat's: a new chat has none, reopening brings it back.
    run(session.open_conversation(None))
    assert session.documents.collections == []
    run(session.open_conversation(cid))
    _wait(run, lambda: session.documents.collections == ["garden"], "the chat's collections")

    # In context, with where it lives; once deleted, the dialog says so plainly.
    dialog = SourceDialog(first)
    qtbot.addWidget(dialog)
    assert dialog.highlighted == first.text.replace("\n", "\u2029")
    assert "garden" in dialog.file_note.text() and not dialog.open_button.isHidden()
    (folder / "guide.md").unlink()
    gone = SourceDialog(first)
    qtbot.addWidget(gone)
    assert "has been deleted or moved" in gone.file_note.text() and gone.open_button.isHidden()

    # Erased with the chat.
    session.db.call_blocking(Store.delete_conversation, cid)
    session.db.call_blocking(erase, None)
    assert session.db.call_blocking(collections_for, cid) == []


def test_the_watcher_reindexes_changed_new_and_deleted_files(
    run: Any, tmp_path: Path, qtbot: Any
) -> None:
    library = CollectionLibrary(tmp_path / "documents.sqlite3", embed_model=lambda: None)
    try:
        reports = Reports(library)
        folder = _folder(tmp_path)
        library.add("garden", folder)
        _wait(run, lambda: len(reports.done) == 1, "the folder indexed")
        library.watch()
        watcher = library.watcher
        watcher.debounce.setInterval(50)
        _wait(run, lambda: bool(watcher.fs.directories()), "the folders watched")
        assert str(folder.resolve() / "notes") in watcher.fs.directories()

        def search(query: str) -> list[str]:
            return [p.file for p in run(library.search(query, ["garden"], [], 5))]

        assert search("sunflowers") == []
        with (folder / "guide.md").open("a", encoding="utf-8") as f:
            f.write("\n## Sunflowers\n\nSow sunflowers in May.\n")
        _wait(run, lambda: len(reports.done) == 2, "a rescan after the change")
        assert (reports.last().updated, reports.last().added) == (1, 0)
        assert search("sunflowers") == ["guide.md"]

        (folder / "notes" / "pests.md").write_text("Aphids hate ladybirds.", encoding="utf-8")
        _wait(run, lambda: len(reports.done) == 3, "a rescan after a new file")
        assert reports.last().added == 1 and search("aphids ladybirds") == ["notes/pests.md"]

        (folder / "guide.md").unlink()
        _wait(run, lambda: len(reports.done) == 4, "a rescan after a deletion")
        assert reports.last().removed == 1 and search("sunflowers") == []
    finally:
        library.close()


def test_collections_window_and_the_composer_button(
    library_session: ChatSession, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    from app.views.main_window import MainWindow

    session = library_session
    window = MainWindow(session)
    qtbot.addWidget(window)
    button = window.composer.collections
    assert button.text() == "Collections"
    tools = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Tools")
    entry = [a for a in tools.actions() if a.text() == "Document collections…"]  # type: ignore[union-attr]
    assert len(entry) == 1
    entry[0].trigger()
    manager = window.document_drops.collections.window
    assert manager is not None and manager.isVisible()
    assert manager.isVisible() and window.document_drops.collections.open() is manager
    reports = Reports(session.documents.library)
    manager.add_folder(_folder(tmp_path), "garden")
    _wait(run, lambda: bool(reports.done), "the folder indexed")

    def cells() -> list[str]:
        row = manager.table.topLevelItem(0)
        return [] if row is None else [row.text(i) for i in range(6)]

    _wait(run, lambda: cells()[4:5] == ["1 skipped"], "the table filled")
    folder = str((tmp_path / "garden").resolve())
    assert cells() == ["garden", "3", "3", "en 100 %", "1 skipped", folder]
    assert manager.summary.text() == "garden: 2 added, 1 skipped"
    assert window.statusBar().currentMessage() == "Collection garden: 2 added, 1 skipped"
    _wait(run, lambda: manager.files.topLevelItemCount() == 3, "the files listed")
    statuses = [manager.files.topLevelItem(i).text(1) for i in range(3)]  # type: ignore[union-attr]
    assert any(s.startswith("skipped: junk.txt: this is binary data") for s in statuses)
    names = [manager.files.topLevelItem(i).text(0) for i in range(3)]  # type: ignore[union-attr]
    assert names == ["guide.md", "junk.txt", "notes/soil.txt"] and "1 chunk" in statuses

    # The composer's button: the collection as a check box, chosen for this chat.
    _wait(run, lambda: button.available == ["garden"], "the button's list")
    button.fill_menu()
    action = button.menu().actions()[0]
    assert action.text() == "garden" and action.isCheckable() and not action.isChecked()
    action.setChecked(True)
    assert session.documents.collections == ["garden"] and button.text() == "Collections (1)"
    assert button.toolTip() == "This chat searches: garden"

    # Removing it: gone from the window; a chat that chose it shows it as removed.
    run(session.documents.library.remove("garden"))
    _wait(run, lambda: manager.table.topLevelItemCount() == 0, "the table emptied")
    _wait(run, lambda: button.available == [], "the button's list emptied")
    button.fill_menu()
    assert button.menu().actions()[0].text() == "garden (removed)"
    manager.close()


def test_a_continued_reply_is_given_its_sources_again(run: Any) -> None:
    from app.chat.attachments import Attachment
    from app.chat.document_context import Turn, continued
    from engine.types import Message

    async def count(messages: tuple[Message, ...]) -> int:  # about 4 characters a token
        return sum(len(m.content) for m in messages) // 4

    doc = Attachment("guide.md", "Tulips like sun. " * 600)  # ~2,550 "tokens"
    turns = [Turn(Message("user", "When?"), (doc,)), Turn(Message("assistant", "In Octo"))]
    cited = [Source(1, "guide.md", "Tulips", "Plant tulips in October.", collection="garden")]
    roomy = run(continued(count, turns, 32_768, cited))
    assert roomy[0].content.startswith("<sources>\n[1] (guide.md, Tulips)")
    assert "<document" in roomy[0].content and roomy[1] == turns[1].message
    tight = run(continued(count, turns, 2_048, cited))  # the whole guide no longer fits
    assert tight[0].content.startswith("<sources>") and "<document" not in tight[0].content
    assert run(continued(count, turns, 2_048, [])) == (
        Message("user", roomy[0].content[roomy[0].content.index("<document") :]),
        turns[1].message,
    )


def test_an_unreadable_index_at_start_is_said_in_the_status_bar(
    library_session: ChatSession, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    # The start-up rescan's future is not awaited (app.application): its failure must reach
    # the window, not stay silent until the user's next document action.
    from app.views.main_window import MainWindow

    session = library_session
    index = session.documents.index_path
    index.write_bytes(b"not a database " * 200)
    window = MainWindow(session)
    qtbot.addWidget(window)
    session.documents.library.rescan_all()
    _wait(run, lambda: bool(window.statusBar().currentMessage()), "the start-up rescan's notice")
    message = window.statusBar().currentMessage()
    assert "cannot be opened as a document index" in message and str(index) in message
    assert not message.startswith("Collection")  # no collection failed: the index did
    assert index.read_bytes() == b"not a database " * 200
