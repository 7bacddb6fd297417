"""Hostile import files (issue 12, rows 1, 6, 7, 8): each gives a clear `ImportFormatError`
naming the field, and the real SQLite file is byte-for-byte unchanged afterwards."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.portability import checks, portable
from app.portability.export import export_conversations, iso_time
from app.portability.importer import import_files, parse_json
from app.portability.portable import ImportFormatError
from app.store import Store, StoreError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "hearth.sqlite3") as s:
        s.create_conversation("already here")
        yield s


def _digest(store: Store) -> str:
    """The database's content (a checkpoint first, so the WAL's pages are in the main file)."""
    with store._db() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


def _hearth_json(**node: Any) -> dict[str, Any]:
    base = {"id": "1", "parent": None, "role": "assistant", "content": "hi"}
    return {"format": "hearth.conversation", "version": 1, "title": "t",
            "tree": {"active_root": None, "nodes": [{**base, **node}]}}  # fmt: skip


def _refused(store: Store, tmp_path: Path, text: str, match: str, name: str = "x.json") -> None:
    before = _digest(store)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportFormatError, match=match):
        import_files(store, [path])
    assert _digest(store) == before
    assert [c.title for c in store.list_conversations()] == ["already here"]


BAD_NODES = [
    ({"stats": {"ttft_s": "x", "completion_tokens": 3}}, r"stats\.ttft_s must be a number"),
    ({"stats": {"completion_tokens": 1.5}}, r"stats\.completion_tokens must be an integer"),
    ({"stats": {"total_s": -1}}, r"stats\.total_s must be a number >= 0"),
    ({"stats": {"newer": {"nested": 1}}}, r"stats\.newer must be a number or text"),
    ({"stats": "fast"}, r"stats must be a JSON object"),
    ({"params": {"temperature": "hot"}}, r"params are not valid sampling settings"),
    ({"params": {"top_p": 7}}, r"top_p must be in"),
    ({"param_changes": "abc"}, r"param_changes must be a list"),
    ({"param_changes": [{"token_index": -1, "params": {}}]}, r"token_index must be an integer"),
    ({"param_changes": [{"token_index": 2}]}, r'param_changes\[0\] must be \{"token_index"'),
    ({"param_changes": [{"token_index": 2, "params": {"top_k": 1.5}}]}, r"top_k must be"),
    ({"parent": ["0"]}, r"parent must be a non-empty text id"),
    ({"id": 1}, r"\.id must be a non-empty text id"),
    ({"id": "x" * 65}, r"\.id must be a non-empty text id of at most 64"),
    ({"role": ["user"]}, r"role must be system, user or assistant"),
    ({"status": ["complete"]}, r"status is not a message status"),
    ({"active_child": {"a": 1}}, r"active_child must be a non-empty text id"),
    ({"created_at": 10**30}, r"created_at is not a time between 1970 and 9999"),
    ({"created_at": 1e300}, r"created_at is not a time between 1970 and 9999"),
    ({"created_at": -5}, r"created_at is not a time between 1970 and 9999"),
    ({"created_at": "99999-01-01"}, r"created_at is not an ISO 8601 time"),
    ({"updated_at": True}, r"updated_at must be an ISO 8601 time"),
    ({"finish_reason": 7}, r"finish_reason must be text"),
    ({"content": [{"type": "text", "text": 5}]}, r"content must be text"),
]


@pytest.mark.parametrize(("node", "match"), BAD_NODES, ids=[m for _, m in BAD_NODES])
def test_a_bad_field_in_a_node_is_named_and_the_database_is_unchanged(
    store: Store, tmp_path: Path, node: dict[str, Any], match: str
) -> None:
    _refused(store, tmp_path, json.dumps(_hearth_json(**node)), match)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"title": "t", "messages": [], "created_at": Infinity}', r"Infinity is not a number"),
        ('{"title": "t", "messages": [], "created_at": NaN}', r"NaN is not a number"),
        ('{"title": "t", "messages": [], "pinned": "false"}', r"pinned must be true or false"),
        ('{"title": 5, "messages": []}', r'"title" must be text'),
        ('{"title": "t", "messages": [], "params": [1]}', r"params must be a JSON object"),
        ('{"title": "t", "messages": [], "created_at": ' + "9" * 5000 + "}", r"invalid JSON"),
        ("[" * 100_000 + "]" * 100_000, r"nested too deeply"),
    ],
)
def test_bad_conversation_fields_and_hostile_json_are_refused(
    store: Store, tmp_path: Path, text: str, match: str
) -> None:
    _refused(store, tmp_path, text, match)


def test_settings_nested_deeper_than_settings_ever_are_refused(
    store: Store, tmp_path: Path
) -> None:
    deep: Any = 1
    for _ in range(50):
        deep = [deep]
    text = json.dumps({"title": "t", "messages": [], "params": {"extra": deep}})
    _refused(store, tmp_path, text, r"nested more than 8 levels")


@pytest.mark.parametrize(
    ("marker", "match"),
    [
        ("<!-- hearth:turn id=² role=user -->", r"id= must be up to 64 ASCII"),
        ("<!-- hearth:turn id=1 parent=٣ role=user -->", r"parent= must be up to 64 ASCII"),
        ("<!-- hearth:turn id=1 role=user closed=² -->", r"closed= must be a number"),
        ("<!-- hearth:turn id=1 role=user closed=999 -->", r"closed=999 is longer"),
        ("<!-- hearth:turn id=1 role=robot -->", r"turn marker needs role=user"),
    ],
)
def test_hostile_markdown_markers_are_refused_with_the_line(
    store: Store, tmp_path: Path, marker: str, match: str
) -> None:
    _refused(store, tmp_path, f"{marker}\n## User\n\nhi\n\n", r"x\.md, line 1: " + match, "x.md")


def test_markdown_front_matter_that_nests_too_deeply_is_refused(
    store: Store, tmp_path: Path
) -> None:
    text = "---\nsettings: " + "[" * 100_000 + "\n---\n\n## User\n\nhi\n"
    _refused(store, tmp_path, text, r"line 2: front matter value is not readable", "x.md")


def test_markdown_front_matter_with_a_time_out_of_range_is_refused(
    store: Store, tmp_path: Path
) -> None:
    text = "---\ncreated: 1e300\n---\n\n## User\n\nhi\n"
    _refused(store, tmp_path, text, r"created_at is not a time between", "x.md")


def test_a_message_over_the_size_limit_is_refused_with_the_limit(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "MAX_MESSAGE_CHARS", 1000)  # the real limit is 4 M characters
    text = json.dumps({"title": "t", "messages": [{"role": "user", "content": "x" * 1001}]})
    _refused(store, tmp_path, text, r"1,001 characters long; Hearth imports messages of at most")
    _refused(store, tmp_path, "## User\n\n" + "y" * 2000, r"at most 1,000 characters", "x.md")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.portability.importer.MAX_FILE_BYTES", 2**20)
    text = json.dumps({"title": "t", "messages": [{"role": "user", "content": "x" * 2**21}]})
    _refused(store, tmp_path, text, r"the file is 2 MB; Hearth imports files of at most 1 MB")


def test_too_many_messages_in_one_import_are_refused_before_any_write(
    store: Store, tmp_path: Path
) -> None:
    turns = [{"role": "user", "content": ""}] * (checks.MAX_MESSAGES + 1)
    _refused(store, tmp_path, json.dumps({"title": "t", "messages": turns}), r"20,001 messages")


def test_too_many_messages_across_files_are_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "MAX_MESSAGES", 3)
    files = []
    for n in range(2):
        files.append(tmp_path / f"{n}.json")
        turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        files[-1].write_text(json.dumps({"title": "t", "messages": turns}))
    before = _digest(store)
    with pytest.raises(ImportFormatError, match=r"2 files: 4 messages"):
        import_files(store, files)
    assert _digest(store) == before


def test_unknown_statistics_from_a_newer_hearth_are_kept(store: Store, tmp_path: Path) -> None:
    stats = {"ttft_s": 0.25, "completion_tokens": 3, "gpu": "H200", "speculative": True}
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(_hearth_json(stats=stats, created_at=1.5)))
    [conv] = import_files(store, [path])
    [message] = store.tree(conv.id)
    assert message.stats == stats and message.created_at == 1.5


def test_plain_content_parts_and_an_integer_time_still_import() -> None:
    parts = [{"type": "text", "text": "a"}]
    turn = {"role": "user", "content": parts}
    text = json.dumps({"title": "t", "created_at": 1_700_000_000, "messages": [turn]})
    [pc] = parse_json(text)
    assert pc.created_at == 1_700_000_000.0 and pc.messages[0].content == "a"


def test_export_all_copes_with_an_impossible_time_already_in_the_database(
    store: Store, tmp_path: Path
) -> None:
    bad = store.create_conversation("from an old import")
    store.add_message(bad.id, None, "user", "kept")
    with store._db() as conn:  # as an older Hearth let it in
        conn.execute("UPDATE conversations SET created_at = 1e300 WHERE id = ?", (bad.id,))
        conn.execute("UPDATE messages SET updated_at = 9e999 WHERE conversation_id = ?", (bad.id,))
    ids = [c.id for c in store.list_conversations()]
    for fmt in ("json", "markdown"):
        written = export_conversations(store, ids, fmt, tmp_path / fmt)
        assert len(written) == 2
        assert any("kept" in p.read_text(encoding="utf-8") for p in written)
    assert iso_time(float("nan")) is None and iso_time(float("inf")) is None


def test_a_big_import_writes_in_short_transactions_and_shows_everything_at_the_end(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(portable, "BATCH_MESSAGES", 5)
    real_batches = portable._batches
    seen: list[tuple[bool, list[str]]] = []

    def watched(conversations: Any) -> Iterator[Any]:
        for batch in real_batches(conversations):
            # Between two batches another process can take the write lock at once, and the
            # conversation being imported is not shown yet.
            other = sqlite3.connect(store.path, isolation_level=None, timeout=0)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                free = True
            except sqlite3.OperationalError:
                free = False
            other.close()
            with Store(store.path, recover_interrupted=False) as app:
                seen.append((free, [c.title for c in app.list_conversations()]))
            yield batch

    monkeypatch.setattr(portable, "_batches", watched)
    turns = [{"role": "user", "content": str(n)} for n in range(23)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"title": "big", "messages": turns}))
    [conv] = import_files(store, [path])
    assert seen == [(True, ["already here"])] * 5
    assert [m.content for m in store.branch(conv.id)] == [str(n) for n in range(23)]
    assert sorted(c.title for c in store.list_conversations()) == ["already here", "big"]


def test_an_import_failing_half_way_leaves_nothing_behind(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(portable, "BATCH_MESSAGES", 2)
    messages = tuple(
        portable.PortableMessage(
            id=str(n), parent_id=str(n - 1) if n > 1 else None, role="user", content=str(n)
        )
        for n in range(1, 6)
    )
    broken = (
        *messages,
        portable.PortableMessage(id="6", parent_id="5", role="user", content="x", status="?"),
    )
    before = _rows(store)
    with pytest.raises(StoreError, match="status must be one of"):
        portable.into_store(store, [portable.PortableConversation("half", broken)])
    assert _rows(store) == before  # (the search index's pages differ: it recorded the delete)
    assert store.search("half") == []


def _rows(store: Store) -> list[Any]:
    with store._db() as conn:
        return [tuple(r) for t in ("conversations", "messages")
                for r in conn.execute(f"SELECT * FROM {t} ORDER BY rowid")]  # fmt: skip


def test_front_matter_infinity_is_text_and_then_refused_as_a_time(
    store: Store, tmp_path: Path
) -> None:
    text = "---\ntitle: NaN\ncreated: Infinity\n---\n\n## User\n\nhi\n"
    _refused(store, tmp_path, text, r"created_at is not an ISO 8601 time: 'Infinity'", "x.md")


def test_the_export_command_copes_with_an_impossible_time_in_the_database(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    with store._db() as conn:
        conn.execute("UPDATE conversations SET created_at = 1e300, updated_at = 9e999")
    out = tmp_path / "out"
    assert (
        main(["export", "--all", "--format", "json", "--out", str(out), "--db", str(store.path)])
        == 0
    )
    [written] = out.iterdir()
    assert json.loads(written.read_text(encoding="utf-8"))["created_at"] is None
    assert capsys.readouterr().err == ""


def test_a_200_mb_file_is_refused_at_the_real_limit_without_being_read(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(200 * 2**20)  # sparse: 200 MB on paper, nothing on disk
    before = _digest(store)
    with pytest.raises(ImportFormatError, match=r"the file is 200 MB; .* at most 64 MB"):
        import_files(store, [path])
    assert _digest(store) == before
