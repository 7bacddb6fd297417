"""Export -> import round trips through real files and a real SQLite store; bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.portability.export import (
    export_conversations,
    fence_closer,
    file_stem,
    marker_prefix,
    to_markdown,
)
from app.portability.importer import import_files, parse_json, parse_markdown, read_file
from app.portability.portable import ImportFormatError, from_store
from app.store import MessageStatus, Store, StoreError

TRICKY = [
    "Plain question?",
    "```python\ndef f():\n    return '## User'\n```\nAfter the fence.",
    "## User\nA line that looks like a turn heading.\n## Assistant\n",
    "---\ntitle: not front matter\nmodel: fake\n---\n",
    "你好，世界！今天天气很好。🙂👩‍👩‍👧‍👦 e\u0301",
    "\n\nLeading and trailing blank lines\n\n\n",
    "An unclosed fence at max tokens:\n```js\nconsole.log('cut",
    "~~~~\nnested ``` inside tilde fence\n~~~~",
    "<!-- hearth:turn id=1 role=user -->\nan exported file pasted into the chat",
    "Windows line ends\r\nand a \u2028 line separator and a tab\there",
    "",
    "   indented code\n\n    four spaces",
]


def _tricky_conversation(store: Store) -> str:
    """A chain of TRICKY turns, plus alternatives: a regenerated reply and an edited turn."""
    conv = store.create_conversation(
        "你好世界: a/b?", model="SmolLM2", system_prompt="Be brief.\n---", params={"top_k": 7}
    )
    parent = None
    ids = []
    for n, content in enumerate(TRICKY):
        role = "user" if n % 2 == 0 else "assistant"
        ids.append(store.add_message(conv.id, parent, role, content).id)
        parent = ids[-1]
    # An alternative reply to turn 1 with its own follow-up, then an edited first question.
    alt = store.add_message(conv.id, ids[0], "assistant", "Alternative ## User reply")
    chosen = store.add_message(conv.id, alt.id, "user", "follow-up under the alternative")
    store.add_message(conv.id, alt.id, "user", "a later follow-up, not shown", activate=False)
    assert store.get_message(alt.id).active_child_id == chosen.id
    store.add_message(conv.id, None, "user", "Edited first question")
    store.set_active(ids[-1])  # show the original long chain again
    reply = store.add_message(conv.id, ids[-1], "assistant", "", status="streaming")
    store.finish_message(
        reply.id, "cancelled", content="stopped ~", finish_reason="cancelled",
        stats={"ttft_s": 0.5, "completion_tokens": 3},
        param_changes=[{"token_index": 2, "params": {"temperature": 1.2}}],
    )  # fmt: skip
    return conv.id


def _shape(store: Store, cid: str) -> dict[str, object]:
    """Everything a round trip must keep: the tree with order and contents, the shown branch."""
    tree = store.tree(cid)
    index = {m.id: n for n, m in enumerate(tree)}
    conv = store.get_conversation(cid)
    return {
        "title": conv.title,
        "system_prompt": conv.system_prompt,
        "model": conv.model,
        "params": conv.params,
        "tree": [
            (m.role, m.content, None if m.parent_id is None else index[m.parent_id]) for m in tree
        ],
        "branch": [index[m.id] for m in store.branch(cid)],
        # Remembered choices in hidden branches too, so switching back shows the same thread.
        "active": [index.get(m.active_child_id or "") for m in tree],
        "siblings": [store.siblings(m.id).index for m in tree],
    }


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "h.sqlite3") as s:
        yield s


def test_every_message_record_field_survives_the_store_and_a_json_round_trip(
    store: Store, tmp_path: Path
) -> None:
    """Issue 22 C1: a field added to `MessageRecord` must reach the database, the JSON file and
    back; one left out of a migration, the row reader or the export fails here."""
    from dataclasses import fields

    from app.store import MessageRecord, record_fields

    filled: dict[str, object] = {
        "role": "assistant", "content": "Four.", "finish_reason": "stop", "error": "a note",
        "model": "tiny", "params": {"temperature": 0.5},
        "param_changes": ({"token_index": 1, "params": {"top_k": 3}},),
        "stats": {"completion_tokens": 2}, "reasoning": "two and two",
        "reasoning_seconds": 1.5,
    }  # fmt: skip
    assert set(filled) == {f.name for f in fields(MessageRecord)}, "fill in the new field here"
    conv = store.create_conversation("all fields")
    question = store.add_message(conv.id, None, "user", "2+2?")
    store.add_message(conv.id, question.id, **filled)  # type: ignore[arg-type]
    assert record_fields(store.branch(conv.id)[-1]) == filled
    [path] = export_conversations(store, [conv.id], "json", tmp_path / "out")
    with Store(tmp_path / "other.sqlite3") as other:
        [imported] = import_files(other, [path])
        assert record_fields(other.branch(imported.id)[-1]) == filled


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_round_trip_keeps_every_message_exactly(store: Store, tmp_path: Path, fmt: str) -> None:
    cid = _tricky_conversation(store)
    [path] = export_conversations(store, [cid], fmt, tmp_path / "out")
    with Store(tmp_path / "other.sqlite3") as other:
        [imported] = import_files(other, [path])
        assert _shape(other, imported.id) == _shape(store, cid)
        if fmt == "json":  # JSON keeps the details too
            last = other.branch(imported.id)[-1]
            assert (last.status, last.finish_reason) == (MessageStatus.CANCELLED, "cancelled")
            assert last.stats == {"ttft_s": 0.5, "completion_tokens": 3}
            assert list(last.param_changes) == [{"token_index": 2, "params": {"temperature": 1.2}}]
            original = store.get_conversation(cid)
            assert other.get_conversation(imported.id).created_at == pytest.approx(
                original.created_at, abs=1e-5
            )


def test_markdown_is_readable_and_keeps_fences_balanced(store: Store) -> None:
    cid = _tricky_conversation(store)
    text = to_markdown(from_store(store, cid))
    assert text.startswith('---\nhearth: 1\ntitle: "你好世界: a/b?"\n')
    assert "\n## User\n\nPlain question?\n\n" in text
    assert "# Other versions" in text
    # The message containing a hearth marker forces another marker prefix.
    assert 'markers: "hearth-2"' in text and "<!-- hearth-2:turn id=1 role=user" in text
    # The unclosed fence is closed for readers: every turn heading renders as a heading.
    from markdown_it import MarkdownIt

    headings = {t.map[0] for t in MarkdownIt().parse(text) if t.type == "heading_open" and t.map}
    markers = [
        n for n, line in enumerate(text.split("\n")) if line.startswith("<!-- hearth-2:turn")
    ]
    assert len(markers) == len(store.tree(cid))
    assert all(n + 1 in headings for n in markers)


def test_json_is_a_superset_of_the_plain_form(store: Store, tmp_path: Path) -> None:
    cid = _tricky_conversation(store)
    [path] = export_conversations(store, [cid], "json", tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    shown = [(m.role, m.content) for m in store.branch(cid)]
    assert data["title"] == "你好世界: a/b?"
    assert data["messages"][0] == {"role": "system", "content": "Be brief.\n---"}
    assert [(m["role"], m["content"]) for m in data["messages"][1:]] == shown
    # Read as plain JSON (without the tree) it gives the shown branch and the system prompt.
    plain = {"title": data["title"], "messages": data["messages"]}
    [pc] = parse_json(json.dumps(plain))
    assert [(m.role, m.content) for m in pc.branch()] == shown
    assert pc.system_prompt == "Be brief.\n---"


def test_plain_json_import(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    plain = {
        "title": "Plain 中文",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": t} for t in ("hel", "lo")]},
        ],
    }
    path.write_text(json.dumps(plain, ensure_ascii=False), encoding="utf-8")
    [conv] = import_files(store, [path])
    assert (conv.title, conv.system_prompt) == ("Plain 中文", "sys")
    assert [(m.role, m.content) for m in store.branch(conv.id)] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]


def test_a_list_of_conversations_imports_together(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "many.json"
    items = [
        {"title": f"c{n}", "messages": [{"role": "user", "content": str(n)}]} for n in range(3)
    ]
    path.write_text(json.dumps({"conversations": items}), encoding="utf-8")
    assert sorted(c.title for c in import_files(store, [path])) == ["c0", "c1", "c2"]


def test_hand_written_markdown_with_headings_imports(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\n## User\n\nWhat is 2+2?\n\n## Assistant\n\n4\n", encoding="utf-8")
    [conv] = import_files(store, [path])
    assert conv.title == "What is 2+2?"  # no front matter: titled after the first question
    assert [(m.role, m.content) for m in store.branch(conv.id)] == [
        ("user", "What is 2+2?"),
        ("assistant", "4"),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.json", '{"title": "x",\n "messages": [}', r"bad\.json, line 2: invalid JSON"),
        ("role.json", '{"messages": [{"role": "bot", "content": "x"}]}', r"messages\[0\]\.role"),
        ("content.json", '{"messages": [{"role": "user", "content": 5}]}', r"content must be text"),
        ("shape.json", "[1, 2]", r"conversation\[0\] must be a JSON object"),
        ("nomsg.json", '{"title": "x"}', r'needs a "messages" list'),
        ("empty.md", "just some text\n", r"empty\.md: no conversation turns found"),
        (
            "marker.md",
            "intro\n<!-- hearth:turn id=1 role=robot -->\n## X\n\nhi\n\n",
            r"marker\.md, line 2: turn marker needs role=user",
        ),
        (
            "parent.md",
            "<!-- hearth:turn id=1 parent=9 role=user -->\n## User\n\nhi\n\n",
            r"line 1: message '1' has parent '9'",
        ),
        (
            "front.md",
            "---\ntitle: x\n\n## User\n\nhi\n",
            r"front\.md, line 4: front matter line is not 'key: value'",
        ),
        (
            "future.json",
            '{"format": "hearth.conversation", "version": 99, "messages": []}',
            r"newer than this Hearth",
        ),
    ],
)
def test_bad_files_give_clear_errors_and_import_nothing(
    store: Store, tmp_path: Path, name: str, content: str, message: str
) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"title": "ok", "messages": [{"role": "user", "content": "x"}]}')
    bad = tmp_path / name
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFormatError, match=message):
        import_files(store, [good, bad])
    assert store.list_conversations() == []


def test_not_utf8_and_missing_files_are_reported(tmp_path: Path) -> None:
    latin = tmp_path / "latin.md"
    latin.write_bytes("## User\n\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(ImportFormatError, match="not UTF-8"):
        read_file(latin)
    with pytest.raises(ImportFormatError, match="cannot read"):
        read_file(tmp_path / "missing.json")


def test_a_failing_insert_rolls_back_the_whole_import(store: Store, tmp_path: Path) -> None:
    from app.portability.portable import PortableConversation, PortableMessage, into_store

    ok = PortableConversation(
        "ok", (PortableMessage(id="1", parent_id=None, role="user", content="hi"),)
    )
    broken = PortableConversation(
        "broken",
        (PortableMessage(id="1", parent_id=None, role="user", content="hi", status="?"),),
    )
    with pytest.raises(StoreError, match="status must be one of"):
        into_store(store, [ok, broken])
    assert store.list_conversations() == []


def test_file_names_are_safe_keep_chinese_and_never_collide(store: Store, tmp_path: Path) -> None:
    assert file_stem("你好世界", None) == "你好世界"
    assert file_stem('a/b:c*?"<>|', None) == "a b c"
    assert file_stem("CON", None) == "_CON"
    assert file_stem("  ...  ", None) == "Untitled"
    assert len(file_stem("长" * 200, None).encode()) <= 180
    ids = [store.create_conversation("你好世界").id for _ in range(2)]
    ids.append(store.create_conversation("你好世界").id)
    out = tmp_path / "out"
    paths = export_conversations(store, ids, "markdown", out)
    again = export_conversations(store, ids[:1], "markdown", out)
    names = [p.name for p in paths + again]
    assert len(set(names)) == 4
    assert names[0].startswith("你好世界 - ") and names[0].endswith(".md")
    assert names[1].endswith(" (2).md")


def test_fence_detection_and_marker_choice() -> None:
    assert fence_closer("```\ncode\n```") == ""
    assert fence_closer("````md\n```\ninner\n```\n") == "````"
    assert fence_closer("text\n~~~\nx") == "\n~~~"
    assert fence_closer("inline ```code``` only") == ""
    assert marker_prefix(["plain"]) == "hearth"
    assert marker_prefix(["<!-- hearth:turn", "<!-- hearth-2:x"]) == "hearth-3"


def test_markdown_with_crlf_line_ends_still_imports() -> None:
    text = "<!-- hearth:turn id=1 role=user -->\r\n## User\r\n\r\nhello\r\n\r\n"
    [msg] = parse_markdown(text).messages
    assert msg.content == "hello"
