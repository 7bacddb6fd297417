"""The conversation store on a real SQLite file: schema, tree, restart, crash recovery, search."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from app.store import (
    SCHEMA_VERSION,
    MessageStatus,
    NewerSchemaError,
    NotFoundError,
    Store,
    StoreError,
    migrations,
)
from app.system import paths

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sub" / "hearth.sqlite3"


@pytest.fixture
def store(db: Path):
    with Store(db) as s:
        yield s


def _chat(store: Store) -> tuple[str, list[str]]:
    """user -> reply A, reply B (shown); returns (conversation id, [user, a, b])."""
    conv = store.create_conversation("Chat")
    user = store.add_message(conv.id, None, "user", "Question?")
    a = store.add_message(conv.id, user.id, "assistant", "Answer A")
    b = store.add_message(conv.id, user.id, "assistant", "Answer B")
    return conv.id, [user.id, a.id, b.id]


def test_migrates_an_empty_file_and_reopens_without_migrating_again(db: Path) -> None:
    Store(db).open()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert {"conversations", "messages", "messages_fts", "conversations_fts"} <= tables
    with Store(db) as again:
        assert again.list_conversations() == []


def test_a_failing_migration_leaves_the_previous_version(db: Path, monkeypatch) -> None:
    Store(db).open()
    bad = "CREATE TABLE half_done (x); SELECT no_such_column FROM conversations;"
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, bad))
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match=f"migration to version {SCHEMA_VERSION + 1} failed"):
        Store(db).open()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in names


def test_a_database_from_a_newer_hearth_is_refused(db: Path) -> None:
    Store(db).open()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this Hearth"):
        Store(db).open()


def test_a_file_that_is_not_a_database_gives_a_store_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"junk\.sqlite3"):
        Store(junk).open()


def test_restart_restores_conversations_branch_and_active_alternatives(db: Path) -> None:
    with Store(db) as store:
        cid, (user, a, b) = _chat(store)
        store.update_settings(cid, model="m", system_prompt="Be brief.", params={"top_k": 5})
        store.set_active(a)
        follow = store.add_message(cid, a, "user", "More about A")
        other = store.create_conversation("Other")
    with Store(db) as store:
        assert [c.id for c in store.list_conversations()] == [other.id, cid]
        conv = store.get_conversation(cid)
        assert (conv.model, conv.system_prompt, conv.params) == ("m", "Be brief.", {"top_k": 5})
        assert [m.id for m in store.branch(cid)] == [user, a, follow.id]
        # Switching to B shows B's (empty) continuation; back to A restores A's follow-up.
        assert [m.id for m in store.set_active(b)] == [user, b]
    with Store(db) as store:
        assert [m.id for m in store.branch(cid)] == [user, b]
        assert [m.id for m in store.set_active(a)] == [user, a, follow.id]


def test_an_edit_is_a_new_sibling_and_the_original_is_kept(store: Store) -> None:
    cid, (user, _a, _b) = _chat(store)
    edited = store.add_message(cid, None, "user", "Question, edited")
    assert [m.content for m in store.branch(cid)] == ["Question, edited"]
    sib = store.siblings(edited.id)
    assert (sib.index, sib.count, sib.ids, sib.previous_id) == (1, 2, (user, edited.id), user)
    assert store.get_message(user).content == "Question?"
    assert [m.id for m in store.set_active(user)][:1] == [user]


def test_siblings_give_position_for_navigation(store: Store) -> None:
    cid, (user, a, b) = _chat(store)
    c = store.add_message(cid, user, "assistant", "Answer C")
    sib = store.siblings(b)
    assert (sib.index, sib.count, sib.ids) == (1, 3, (a, b, c.id))
    assert (sib.previous_id, sib.next_id) == (a, c.id)
    assert store.siblings(user).count == 1


def test_set_active_deep_in_a_hidden_branch_shows_its_ancestors(store: Store) -> None:
    cid, (user, a, b) = _chat(store)
    deep = store.add_message(cid, a, "user", "under A", activate=False)
    assert [m.id for m in store.branch(cid)] == [user, b]
    assert [m.id for m in store.set_active(deep.id)] == [user, a, deep.id]


def test_streaming_reply_is_saved_as_it_grows_and_finished_with_details(store: Store) -> None:
    cid, (user, _a, _b) = _chat(store)
    reply = store.add_message(cid, user, "assistant", "", status="streaming", params={"seed": 1})
    store.update_message_content(reply.id, "Hel")
    assert store.get_message(reply.id).content == "Hel"
    changes = [{"token_index": 3, "params": {"temperature": 1.5}}]
    stats = {"ttft_s": 0.25, "decode_tokens_per_s": 40.0, "completion_tokens": 7}
    done = store.finish_message(
        reply.id, "complete", content="Hello!", finish_reason="stop", stats=stats,
        param_changes=changes,
    )  # fmt: skip
    assert (done.status, done.content, done.finish_reason) == (
        MessageStatus.COMPLETE,
        "Hello!",
        "stop",
    )
    assert done.stats == stats and list(done.param_changes) == changes
    assert done.params == {"seed": 1}
    assert store.resume_message(reply.id).status is MessageStatus.STREAMING


def test_engine_values_are_accepted_for_params_stats_and_changes(store: Store) -> None:
    from engine.types import ParamsApplied, SamplingParams, Stats

    cid, (user, _a, _b) = _chat(store)
    params = SamplingParams(temperature=0.0, stop=("###",))
    reply = store.add_message(cid, user, "assistant", "", status="streaming", params=params)
    change = ParamsApplied(token_index=4, params=params.replace(temperature=1.0))
    done = store.finish_message(
        reply.id, "cancelled", stats=Stats(completion_tokens=9), param_changes=[change]
    )
    assert SamplingParams.from_dict(dict(done.params)) == params
    assert done.stats["completion_tokens"] == 9
    assert done.param_changes[0]["params"]["temperature"] == 1.0


_CRASHING_WRITER = """
import os, sys
from app.store import Store
store = Store(sys.argv[1])
conv = store.create_conversation("crash")
user = store.add_message(conv.id, None, "user", "tell me a story")
reply = store.add_message(conv.id, user.id, "assistant", "", status="streaming")
store.update_message_content(reply.id, "Once upon")
store.update_message_content(reply.id, "Once upon a time")
print(conv.id, flush=True)
os._exit(9)  # killed mid-stream: no close, no finish
"""


def test_a_reply_streaming_when_the_process_died_is_restored_as_partial(db: Path) -> None:
    script = textwrap.dedent(_CRASHING_WRITER)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(db)], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 9, proc.stderr
    cid = proc.stdout.strip()
    with Store(db) as store:
        assert store.recovered == 1
        reply = store.branch(cid)[-1]
        assert (reply.status, reply.content) == (MessageStatus.PARTIAL, "Once upon a time")


_ENDLESS_WRITER = """
import sys
from app.store import Store
store = Store(sys.argv[1])
conv = store.create_conversation("killed")
user = store.add_message(conv.id, None, "user", "go on forever")
reply = store.add_message(conv.id, user.id, "assistant", "", status="streaming")
text = ""
while True:
    text += "token "
    store.update_message_content(reply.id, text)
    if len(text) == 6:
        print(conv.id, flush=True)
"""


def test_a_process_killed_while_writing_leaves_a_sound_database(db: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _ENDLESS_WRITER, str(db)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    cid = proc.stdout.readline().strip()
    proc.kill()  # SIGKILL mid-write: no cleanup of any kind
    proc.wait()
    proc.stdout.close()
    with Store(db) as store:
        [_user, reply] = store.branch(cid)
        assert reply.status is MessageStatus.PARTIAL
        assert reply.content and reply.content == "token " * (len(reply.content) // 6)
        assert [h.message_id for h in store.search("token")] == [reply.id]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    conn.close()


def test_a_second_process_can_open_without_recovering(db: Path) -> None:
    with Store(db) as app_store:
        cid, (user, _a, _b) = _chat(app_store)
        live = app_store.add_message(cid, user, "assistant", "", status="streaming")
        with Store(db, recover_interrupted=False) as cli_store:
            assert cli_store.get_message(live.id).status is MessageStatus.STREAMING


def test_delete_undo_and_purge(store: Store) -> None:
    cid, _ = _chat(store)
    keep = store.create_conversation("Keep")
    store.delete_conversation(cid)
    assert [c.id for c in store.list_conversations()] == [keep.id]
    assert [c.id for c in store.list_conversations(deleted=True)] == [cid]
    assert store.search("Question") == []
    store.restore_conversation(cid)
    assert {c.id for c in store.list_conversations()} == {cid, keep.id}
    store.delete_conversation(cid)
    assert store.purge_deleted() == 1
    with pytest.raises(NotFoundError):
        store.get_conversation(cid)
    assert store.search("Question") == []


def test_rename_and_pin_order_the_list(store: Store) -> None:
    first = store.create_conversation("first")
    store.create_conversation("second")
    store.set_pinned(first.id, True)
    assert store.rename_conversation(first.id, "第一").title == "第一"
    assert [c.title for c in store.list_conversations()] == ["第一", "second"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("quick fox", {"en"}),  # terms of 3+ chars: trigram index, AND, any order
        ("QUICK", {"en"}),  # case-insensitive
        ("ox", {"en"}),  # 2 chars: LIKE fallback
        ("天气", {"zh"}),  # 2 Chinese characters
        ("今天天气", {"zh"}),  # 4 Chinese characters: trigram
        ("天气 sunny", {"zh"}),
        ("100%", {"pct"}),  # LIKE/FTS metacharacters are literal
        ('"quoted"', {"pct"}),
        ("nothing-here", set()),
    ],
)
def test_search_finds_english_and_chinese(store: Store, query: str, expected: set[str]) -> None:
    ids = {}
    for key, text in [
        ("en", "The quick brown fox"),
        ("zh", "今天天气很好 sunny day"),
        ("pct", 'It is 100% "quoted"'),
    ]:
        conv = store.create_conversation(f"conv {key}")
        ids[store.add_message(conv.id, None, "user", text).id] = key
    hits = store.search(query)
    assert {ids[h.message_id] for h in hits if h.message_id} == expected


def test_search_matches_titles_and_marks_the_match_in_the_snippet(store: Store) -> None:
    conv = store.create_conversation("旅行计划 Japan")
    long_text = "x" * 300 + " the word needle sits here " + "y" * 300
    store.add_message(conv.id, None, "user", long_text)
    [title_hit] = store.search("旅行")
    assert (title_hit.conversation_id, title_hit.message_id) == (conv.id, None)
    [hit] = store.search("needle")
    start, end = hit.highlights[0]
    assert hit.snippet[start:end] == "needle"
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…") and len(hit.snippet) < 200


def test_bad_input_gives_typed_errors(store: Store) -> None:
    cid, (user, _a, _b) = _chat(store)
    other = store.create_conversation("other")
    with pytest.raises(StoreError, match="role must be one of"):
        store.add_message(cid, user, "robot", "hi")
    with pytest.raises(StoreError, match="belongs to another conversation"):
        store.add_message(other.id, user, "assistant", "hi")
    with pytest.raises(NotFoundError, match="no message"):
        store.update_message_content("nope", "x")
    with pytest.raises(NotFoundError, match="no conversation"):
        store.add_message("nope", None, "user", "x")
    with pytest.raises(StoreError, match="status must be one of complete, streaming"):
        store.finish_message(user, "exploded")
    assert len(store.tree(cid)) == 3  # nothing half-written


def test_a_store_built_on_one_thread_works_on_a_worker(db: Path) -> None:
    store = Store(db)  # built here, connection opened lazily on the worker
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(_chat(store)))
    worker.start()
    worker.join()
    cid, _ = result[0]
    assert len(store.branch(cid)) == 2
    store.close()


def test_transaction_is_all_or_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.create_conversation("half")
        raise RuntimeError("boom")
    assert store.list_conversations() == []


def test_data_dir_follows_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("HEARTH_LOG_DIR", raising=False)
    assert paths.database_path() == tmp_path / "d" / paths.DATABASE_NAME
    assert paths.log_dir() == tmp_path / "d" / "logs"
    assert paths.ensure_dir(paths.log_dir()).is_dir()
    monkeypatch.delenv("HEARTH_DATA_DIR")
    assert paths.data_dir().name == "Hearth"


# -- issue 12: hostile files and a second process ----------------------------------------------


def test_a_newer_database_is_refused_and_its_bytes_are_unchanged(db: Path) -> None:
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)  # as a newer Hearth might leave it: rollback journal, v99
    conn.execute("CREATE TABLE future (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(NewerSchemaError, match="schema version 99, newer than this Hearth"):
        Store(db).open()
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]  # no -wal / -shm either


def test_opening_needs_no_write_lock_when_nothing_needs_recovery(db: Path) -> None:
    with Store(db) as store:
        _chat(store)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process (a long import) holds the write lock
    try:
        with Store(db, busy_timeout_s=0.0) as app_start:
            assert app_start.recovered == 0
            assert [c.title for c in app_start.list_conversations()] == ["Chat"]
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_an_import_cut_short_by_a_crash_is_dropped_an_hour_later_never_sooner(db: Path) -> None:
    with Store(db) as store:
        crashed = store.create_conversation("crashed import", staged=True)
        running = store.create_conversation("import running now", staged=True)
        assert store.list_conversations() == store.list_conversations(deleted=True) == []
        assert store.purge_deleted() == 0  # emptying the trash leaves staged imports alone
        with store._db() as conn:
            conn.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ?",
                (-(time.time() - 2 * 3600), crashed.id),
            )
    with Store(db) as store:
        store.open()
        with pytest.raises(NotFoundError):
            store.get_conversation(crashed.id)
        store.reveal_staged([running.id])
        assert [c.title for c in store.list_conversations()] == ["import running now"]


@pytest.mark.parametrize("when", [1e300, float("inf"), float("nan"), -1.0])
def test_the_store_refuses_a_time_no_calendar_holds(store: Store, when: float) -> None:
    with pytest.raises(StoreError, match="between 1970 and 9999"):
        store.create_conversation("x", created_at=when)
    conv = store.create_conversation("ok")
    with pytest.raises(StoreError, match="between 1970 and 9999"):
        store.add_message(conv.id, None, "user", "hi", updated_at=when)
