"""Property-based fuzzing of the JSON and Markdown import parsers (issue 12).

The property: any input either imports (and the result exports and re-imports), or raises
`ImportFormatError` and leaves the real SQLite file unchanged. Never another exception.
Bounded (examples, sizes) so each test takes seconds; ``HEARTH_FUZZ_EXAMPLES=5000`` hunts longer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.portability.export import THINKING_CLOSE, THINKING_OPEN, export_conversations
from app.portability.importer import import_files
from app.portability.portable import ImportFormatError
from app.store import Store

FUZZ = settings(
    max_examples=int(os.environ.get("HEARTH_FUZZ_EXAMPLES", "120")),  # more for a longer hunt
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["1", "2", "user", "assistant", "complete", "2026-12-02T10:00:00Z", "²"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
NODE_KEYS = ["id", "parent", "role", "content", "active_child", "status", "finish_reason", "error",
             "model", "params", "param_changes", "stats", "created_at", "updated_at", "reasoning",
             "reasoning_seconds"]  # fmt: skip
CONV_KEYS = ["title", "messages", "format", "version", "model", "system_prompt", "params",
             "created_at", "updated_at", "pinned", "tree"]  # fmt: skip


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    with (
        tempfile.TemporaryDirectory(prefix="hearth-fuzz-") as tmp,
        Store(Path(tmp) / "hearth.sqlite3") as s,
    ):
        s.create_conversation("already here")
        yield s


def _digest(store: Store) -> str:
    with store._db() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


def _good_node(n: int) -> dict[str, Any]:
    return {"id": str(n), "parent": str(n - 1) if n > 1 else None,
            "role": "user" if n % 2 else "assistant", "content": f"turn {n}",
            "status": "complete", "stats": {"ttft_s": 0.1, "completion_tokens": 2},
            "params": {"temperature": 0.5}, "created_at": "2026-12-02T10:00:00Z",
            "param_changes": [{"token_index": 1, "params": {"top_k": 3}}]}  # fmt: skip


@st.composite
def hearth_documents(draw: st.DrawFn) -> Any:
    """A valid Hearth JSON export with a few fields replaced by arbitrary JSON values."""
    nodes = [_good_node(n) for n in range(1, draw(st.integers(1, 4)) + 1)]
    tree = {"active_root": "1", "nodes": nodes}
    doc = {
        "format": "hearth.conversation",
        "version": 1,
        "title": "t",
        "messages": [],
        "tree": tree,
    }
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            node = draw(st.sampled_from(nodes))
            node[draw(st.sampled_from(NODE_KEYS))] = draw(VALUES)
        else:
            doc[draw(st.sampled_from(CONV_KEYS))] = draw(VALUES)
    return draw(st.sampled_from([doc, [doc], {"conversations": [doc]}]))


MARKDOWN_LINES = st.sampled_from([
    "---", "title: \"t\"", "created: 1e300", "settings: {\"temperature\": 2}", "hearth: 1",
    "settings: [[[[", "markers: 5", "## User", "## Assistant", "## System", "", "text",
    "```", "<!-- hearth:aside -->", "updated: \"2026-12-02T10:00:00Z\"", "title: [1]",
    THINKING_OPEN, THINKING_CLOSE, THINKING_OPEN + "abc" + THINKING_CLOSE,
])  # fmt: skip


@st.composite
def markers(draw: st.DrawFn) -> str:
    attrs = draw(st.lists(st.sampled_from([
        "id=1", "id=2", "id=²", "id=", "parent=1", "parent=9", "parent=²", "role=user",
        "role=assistant", "role=bot", "active", "status=partial", "status=?", "closed=1",
        "closed=99", "closed=²", "id=" + "7" * 70, "thinking=3", "thinking=²", "thought=1.5",
        "thought=x", "thought=1e999",
    ]), max_size=5))  # fmt: skip
    return f"<!-- hearth:turn {' '.join(attrs)} -->"


def _check(store: Store, tmp: Path, name: str, data: bytes) -> None:
    before = _digest(store)
    path = tmp / name
    path.write_bytes(data)
    try:
        added = import_files(store, [path])
    except ImportFormatError as exc:
        assert str(exc).startswith(str(path))  # names the file
        assert _digest(store) == before
        return
    # A valid import: it exports in both formats, and the export imports again.
    for fmt in ("json", "markdown"):
        for written in export_conversations(store, [c.id for c in added], fmt, tmp / fmt):
            import_files(store, [written])


@FUZZ
@given(doc=hearth_documents())
def test_any_mutation_of_a_hearth_json_file_imports_or_is_refused_cleanly(
    store: Store, doc: Any
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(store, Path(tmp), "doc.json", json.dumps(doc).encode())


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_import_or_are_refused_cleanly(store: Store, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(store, Path(tmp), "any.json", data)
        _check(store, Path(tmp), "any.md", data)


@FUZZ
@given(lines=st.lists(MARKDOWN_LINES | markers() | st.text(max_size=20), max_size=14))
def test_any_markdown_made_of_markers_and_front_matter_imports_or_is_refused_cleanly(
    store: Store, lines: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(store, Path(tmp), "doc.md", "\n".join(lines).encode())
