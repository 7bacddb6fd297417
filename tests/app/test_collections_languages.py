"""The Collections window shows each collection's languages and warns when its embedding model
does not cover them: a real documents.sqlite3 indexed from real Chinese (CMRC 2018) and
English (SQuAD) passages with the engine's own detector, the real window offscreen, the real
embedding catalogue plus an English-only model added in the test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.chat.session import ChatSession
from app.documents import DocumentIndex
from app.views.documents.collections_window import CollectionsWindow
from engine.hub.embedding import EmbeddingModel, load_embedding_models

DATA = Path(__file__).parent.parent / "data" / "docs_qa"
ENGLISH_ONLY = EmbeddingModel(
    repo_id="example/english-embed-GGUF",
    filename="english-embed-Q8_0.gguf",
    name="English Embed",
    architecture="bert",
    dim=384,
    pooling="mean",
    quant="Q8_0",
    size_bytes=1,
    languages=("en",),
    licence="MIT",
)


def _wait(run: Any, done: Callable[[], bool], what: str) -> None:
    async def until() -> None:
        for _ in range(3000):  # a safety net of ~30 s, never the expectation
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"gave up waiting: {what}")

    run(until())


def _passages(name: str, count: int) -> str:
    passages = json.loads((DATA / name).read_text(encoding="utf-8"))["passages"]
    return "\n\n".join(p["text"] for p in passages[:count])


@pytest.fixture
def indexed(session: ChatSession, tmp_path: Path) -> Iterator[Path]:
    """A collection "wiki" of a Chinese and an English document, indexed with the English-only
    model recorded as its embedding model (keyword rows: only the model's name matters here)."""
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "zh.txt").write_text(_passages("cmrc2018_dev_subset.json", 12), "utf-8")
    (folder / "en.txt").write_text(_passages("squad_dev_subset.json", 12), "utf-8")
    path = tmp_path / "documents.sqlite3"
    index = DocumentIndex(path)
    index.add("wiki", folder)
    index.set_embed_model("wiki", f"/models/embeddings/{ENGLISH_ONLY.filename}")
    index.close()
    session.documents.index_path = path
    yield path
    session.documents.close()


def _cells(window: CollectionsWindow) -> list[str]:
    row = window.table.topLevelItem(0)
    return [] if row is None else [row.text(i) for i in range(window.table.columnCount())]


def test_languages_column_and_a_warning_for_a_model_that_lacks_one(
    session: ChatSession, indexed: Path, run: Any, qtbot: Any
) -> None:
    window = CollectionsWindow(session.documents)
    qtbot.addWidget(window)
    catalogue = load_embedding_models()
    window.embedding_models = [*catalogue, ENGLISH_ONLY]
    window.refresh()
    _wait(run, lambda: bool(_cells(window)), "the table filled")
    header = window.table.headerItem()
    assert [header.text(i) for i in range(6)] == [
        "Collection", "Files", "Chunks", "Languages", "Status", "Folders",
    ]  # fmt: skip
    languages = _cells(window)[3]
    # Both languages, largest share first, their percentages adding up to 100.
    shares = dict(part.rsplit(" ", 2)[:2] for part in languages.split(", "))
    assert sorted(shares) == ["en", "zh-Hans"] and sum(map(int, shares.values())) == 100
    assert "Chinese (zh-Hans)" in window.table.topLevelItem(0).toolTip(3)  # type: ignore[union-attr]
    _wait(run, lambda: not window.language_warning.isHidden(), "the warning shown")
    warning = window.language_warning.text()
    assert warning.startswith("⚠ wiki: its embedding model, English Embed, does not cover")
    assert "Chinese (zh-Hans)" in warning and "English (en)" not in warning
    assert f"such as {catalogue[0].name}" in warning  # a catalogue model that covers Chinese

    # Indexed with the catalogue's multilingual model instead: no warning.
    index = DocumentIndex(indexed)
    index.set_embed_model("wiki", f"/models/embeddings/{catalogue[0].filename}")
    index.close()
    window.refresh()
    _wait(run, lambda: window.language_warning.isHidden(), "the warning gone")
    assert window.language_warning.text() == "" and _cells(window)[3] == languages
    window.close()
