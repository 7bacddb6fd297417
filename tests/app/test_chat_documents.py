"""Documents in the chat, end to end on the real bridge, the real tiny engine and a real SQLite
file: attach a file made here, the exact fit count, the send, the store (by hash), export and import
(JSON and Markdown), erasing with the conversation; passages with sources when a document does not
fit; a bad file leaves a message and the draft as it was; a long paste becomes an attachment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.chat.attachments import PASTE_THRESHOLD_CHARS, AttachmentError, read_file
from app.chat.document_context import attachment_document
from app.chat.session import ChatSession
from app.documents.chunking import chunk_document
from app.documents.ranking import terms
from app.documents.retrieval import AttachedText, Passage, Retriever
from app.portability.export import export_conversations
from app.portability.importer import import_files
from app.store import Store
from app.store.attachments import attachments_for, blob_count, sources_for
from app.store.organise import erase
from engine.errors import EngineClosedError
from engine.types import Message, SamplingParams
from tests.app.conftest import GatedBackend, close_session, make_session

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=6, repetition_penalty=1.0)
NOTE = "# Hearth notes\n\nThe lighthouse keeper's cat is called Biscuit.\n\nIt likes fish.\n"


def _wait_fit(session: ChatSession, run: Any) -> tuple[int, int, bool]:
    fit = run(session.documents.update_fit())
    assert fit is not None
    return fit


def test_an_attached_file_is_counted_sent_whole_stored_exported_and_erased(
    session: ChatSession, run: Any, tmp_path: Path
) -> None:
    session.set_params(GREEDY)
    note = tmp_path / "notes.md"
    note.write_text(NOTE, encoding="utf-8")
    fits: list[tuple[int, int, bool]] = []
    session.documents.tray.sig_fit_changed.connect(lambda *a: fits.append(a))
    attached = run(session.documents.add_file(note))
    assert attached is not None and attached.name == "notes.md"
    used, window, ok = _wait_fit(session, run)
    engine = session.bridge.backend
    assert engine is not None
    block = '<document index="1" name="notes.md">\n' + NOTE.strip() + "\n</document>\n\n"
    # Exact: the model's own template and tokenizer over what will be sent.
    assert used == engine.count_tokens((Message("user", block),))
    assert window == session.model_info.context_window and ok and fits[-1] == (used, window, True)
    text = attached.text  # as the document reader gives it (Markdown, its last newline dropped)
    assert session.documents.tray.items[0].tokens == engine.count_tokens((Message("user", text),))

    run(session.send("What is the cat called?"))
    user, reply = session.messages.items()
    assert user.attachments[0]["name"] == "notes.md" and not session.documents.tray.items
    assert reply.record.finish_reason in ("stop", "length")
    # Sent whole, the file is the reply's source [1] (issue 34, C12), never a passage again.
    assert reply.sources == [{"n": 1, "file": "notes.md", "locator": "", "text": text,
                              "before": "", "after": "", "whole": True}]  # fmt: skip
    assert reply.record.stats and reply.record.stats["prompt_tokens"] == engine.count_tokens(
        (Message("user", block + "What is the cat called?"),)
    )
    shown: list[tuple[int, int, int]] = []
    session.sig_context_changed.connect(lambda *a: shown.append(a))
    run(session.update_context())  # the status bar's count includes the document
    # As the engine counted it when the reply was written (issue 34, C10), not re-counted.
    assert (
        shown[-1][0]
        == reply.record.stats["prompt_tokens"] + reply.record.stats["completion_tokens"]
    )
    store_items = session.db.call_blocking(attachments_for, [user.id])
    assert store_items[user.id][0]["text"] == text
    assert store_items[user.id][0]["sections"] == [list(p) for p in attached.sections]
    assert attached.sections  # the Markdown reader's heading places, kept
    cid = session.conversation_id
    assert cid is not None

    # The same document attached again is stored once (by hash).
    run(session.documents.add_file(note))
    run(session.send("And what does it like?"))
    assert session.db.call_blocking(blob_count) == 1

    # Export (JSON exactly, Markdown for readers) and import it back.
    out = tmp_path / "out"
    paths = session.db.call_blocking(export_conversations, [cid], "json", out)
    data = json.loads(paths[0].read_text(encoding="utf-8"))
    nodes = [n for n in data["tree"]["nodes"] if n.get("attachments")]
    assert len(nodes) == 2 and nodes[0]["attachments"][0]["text"] == text
    md = session.db.call_blocking(export_conversations, [cid], "markdown", out)[0]
    assert "*Attached:* `notes.md`" in md.read_text(encoding="utf-8")
    imported = session.db.call_blocking(import_files, paths)
    tree = session.db.call_blocking(Store.tree, imported[0].id)
    got = session.db.call_blocking(attachments_for, [m.id for m in tree])
    assert [a[0]["name"] for a in got.values()] == ["notes.md", "notes.md"]
    md_import = session.db.call_blocking(import_files, [md])
    md_tree = session.db.call_blocking(Store.tree, md_import[0].id)
    assert md_tree[0].content == "What is the cat called?"  # the trailer is dropped again

    # Erased with the conversation: the trash rules hold (deleted: kept; erased: gone).
    for conv in (cid, imported[0].id, md_import[0].id):
        session.db.call_blocking(Store.delete_conversation, conv)
    assert session.db.call_blocking(blob_count) == 1  # in the trash: restorable
    session.db.call_blocking(erase, None)
    assert session.db.call_blocking(blob_count) == 0
    db_file = session.db.call_blocking(lambda s: s.path)
    assert b"lighthouse keeper" not in Path(db_file).read_bytes()


def test_a_document_too_big_to_fit_goes_in_as_cited_passages(
    session: ChatSession, run: Any, tmp_path: Path
) -> None:
    session.set_params(GREEDY)
    filler = "\n\n".join(f"Paragraph {i} talks about weather and clouds." for i in range(400))
    text = f"# Report\n\n{filler}\n\n# Pets\n\nThe lighthouse cat Biscuit eats sardines.\n"
    big = tmp_path / "report.md"
    big.write_text(text, encoding="utf-8")
    run(session.documents.add_file(big))
    used, window, ok = _wait_fit(session, run)
    assert used > window and not ok
    run(session.send("What does Biscuit the cat eat?"))
    reply = session.messages.items()[1]
    assert reply.record.finish_reason in ("stop", "length")
    assert reply.sources and reply.sources[0]["n"] == 1
    assert "Biscuit eats sardines" in reply.sources[0]["text"]
    assert reply.sources[0]["locator"] == "Pets"
    assert reply.record.stats and reply.record.stats["prompt_tokens"] <= window
    saved = session.db.call_blocking(sources_for, [reply.id])
    assert saved[reply.id] == reply.sources
    cid = session.conversation_id
    md = session.db.call_blocking(export_conversations, [cid], "markdown", tmp_path / "o")[0]
    expected = "[1] report.md, Pets: “The lighthouse cat Biscuit eats sardines.”"
    assert expected in md.read_text(encoding="utf-8")
    reopened = session.db.call_blocking(lambda s: s)  # the store, for load_branch below
    from app.listmodels.branch import load_branch

    assert load_branch(reopened, cid)[1].sources == reply.sources


def test_bad_files_say_why_in_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(AttachmentError, match=r"^garbage.txt: .*binary data"):
        read_file(garbage)
    empty = tmp_path / "empty.md"
    empty.write_text("  \n", encoding="utf-8")
    with pytest.raises(AttachmentError, match=r"^empty.md: .*no text"):
        read_file(empty)
    with pytest.raises(AttachmentError, match=r"^gone.txt: cannot be read"):
        read_file(tmp_path / "gone.txt")


def _search_attached(tmp_path: Path, docs: list[Any], query: str) -> list[Passage]:
    """Attachments searched as the chat does: the in-memory index of `app.documents`."""
    retriever = Retriever(tmp_path / "documents.sqlite3")
    try:
        texts = [AttachedText(d.sha256, attachment_document(d)) for d in docs]
        return retriever.search(query, attachments=texts).result(timeout=60)
    finally:
        retriever.close()


def test_ranking_finds_chinese_and_english_passages(tmp_path: Path) -> None:
    from app.chat.attachments import Attachment

    doc = Attachment("a.md", "# 天气\n\n今天北京下雨。\n\n# Cats\n\nCats purr when content.\n")
    found = _search_attached(tmp_path, [doc], "北京的天气怎么样")
    assert found[0].locator == "天气" and found[0].file == "a.md" and found[0].path == ""
    assert _search_attached(tmp_path, [doc], "why do cats purr")[0].locator == "Cats"
    assert "北京" in terms("北京下雨") and PASTE_THRESHOLD_CHARS > 100


def test_docx_html_and_csv_made_here_are_read_through_the_document_readers(
    tmp_path: Path,
) -> None:
    import docx  # python-docx: a real Word file

    word = docx.Document()
    word.add_heading("Garden", level=1)
    word.add_paragraph("Plant the tulips in October.")
    word.save(str(tmp_path / "plan.docx"))
    (tmp_path / "page.html").write_text(
        "<html><body><h1>Menu</h1><p>Soup &amp; bread</p><script>x()</script></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "prices.csv").write_text("item,price\ntea,3\n", encoding="utf-8")
    (tmp_path / "notes.conf").write_text("key = value\n", encoding="utf-8")  # unknown: text
    got = {
        p: read_file(tmp_path / p) for p in ("plan.docx", "page.html", "prices.csv", "notes.conf")
    }
    assert "Plant the tulips in October." in got["plan.docx"].text
    assert "Soup & bread" in got["page.html"].text and "x()" not in got["page.html"].text
    assert "tea" in got["prices.csv"].text and "3" in got["prices.csv"].text
    assert got["notes.conf"].text == "key = value\n"
    assert got["plan.docx"].size == (tmp_path / "plan.docx").stat().st_size
    # Its places survive the store: a passage from it cites its heading.
    from app.chat.chat_documents import attachment_of

    again = attachment_of(got["plan.docx"].to_dict())
    chunks = chunk_document(attachment_document(again))
    assert again.sections and [c.locator for c in chunks][-1] == "Garden"


class _CannotCount(GatedBackend):
    """The real engine, but counting fails (as a backend that has just been closed would)."""

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        raise EngineClosedError("the engine has been shut down")


def test_a_backend_that_cannot_count_neither_errors_nor_blocks_the_send(
    run: Any, tiny_engine: Any, tmp_path: Path
) -> None:
    session = make_session(run, _CannotCount(tiny_engine), tmp_path / "h.sqlite3")
    try:
        session.set_params(GREEDY)
        errors: list[Any] = []
        session.sig_error.connect(errors.append)
        note = tmp_path / "n.txt"
        note.write_text("Biscuit likes fish.", encoding="utf-8")
        run(session.documents.add_file(note))
        assert run(session.documents.update_fit()) is None and not errors
        run(session.send("What does Biscuit like?"))
        reply = session.messages.item(1)
        assert not errors and reply.record.finish_reason in ("stop", "length")
        whole = '<document index="1" name="n.txt">\nBiscuit likes fish.\n</document>\n\n'
        expected = tiny_engine.count_tokens((Message("user", whole + "What does Biscuit like?"),))
        assert reply.record.stats and reply.record.stats["prompt_tokens"] == expected  # sent whole
    finally:
        close_session(session)


def test_passages_keep_their_place_and_the_text_around_them(tmp_path: Path) -> None:
    from app.chat.attachments import Attachment

    text = "# Intro\n\nFirst part.\n\n## Setup\n\n安装很简单。运行命令即可。\n\nThe end.\n"
    guide = Attachment("guide.md", text, kind="markdown")
    chunks = chunk_document(attachment_document(guide))
    assert [c.locator for c in chunks] == ["Intro", "Intro › Setup"]
    setup = _search_attached(tmp_path, [guide], "安装命令")[0]
    assert setup.locator == "Intro › Setup" and setup.text.startswith("安装很简单。")
    assert "First part." in setup.before and setup.after == ""
    # A question that names nothing in the document still gets its opening.
    opening = _search_attached(tmp_path, [guide], "summarise")
    assert [p.locator for p in opening] == ["Intro", "Intro › Setup"]


def test_documents_stay_with_their_user_turn_past_a_system_prompt_and_tool_turns() -> None:
    from app.chat.chat_documents import ChatDocuments
    from app.listmodels.messages import MessageItem

    doc = {"name": "a.txt", "text": "Alpha.", "size": 6}
    items = [MessageItem.of("1", "user", "q1", attachments=[doc]),
             MessageItem.of("2", "assistant", "a1"), MessageItem.of("3", "user", "q2")]  # fmt: skip
    history = (Message("system", "Be brief."), Message("user", "q1"),
               Message("assistant", ""), Message("tool", "42", tool_call_id="c1"),
               Message("assistant", "a1"), Message("user", "q2"))  # fmt: skip
    turns = ChatDocuments.turns(history, items)
    assert [len(t.attachments) for t in turns] == [0, 1, 0, 0, 0, 0]
    assert [t.message for t in turns] == list(history)  # tool turns kept as they are
