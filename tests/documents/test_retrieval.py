"""Per-question retrieval (`app.documents.retrieval`): collections and attachments searched by
one code on a worker thread, rankings merged, the text around each passage, a collection's
own embedding model (hybrid) next to a keyword-only one, attachments embedded once with the
configured model, and an embedding model that cannot be opened leaving keyword search.

The embedder here is a small real one (hashed word counts, L2-normalised): which model each
search opens and where vectors land is what is tested; the engine's embedder itself is tested
in test_index.py and tests/engine/embed/test_embed.py (loading it costs ~40 s on this machine)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from app.documents import DocumentIndex, extract_text
from app.documents.ranking import terms
from app.documents.retrieval import AttachedText, Passage, Retriever, merge


class WordHashEmbedder:
    """Bag of words hashed into 64 dims: related texts share words, so cosine ranks them."""

    dim = 64

    def __init__(self, model: str) -> None:
        self.name = f"word-hash:{Path(model).name}"

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for term in terms(text):
                out[row, zlib.crc32(term.encode()) % self.dim] += 1.0
            out[row, 0] += 1e-3  # never a zero row
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def tiny_model(tmp_path: Path) -> str:
    return str(tmp_path / "word-hash.gguf")  # a name: the embedder opened for it is built here


def _open(model: str) -> WordHashEmbedder:
    return WordHashEmbedder(model)


def _collections(tmp_path: Path, model: str) -> Path:
    """Two collections in one index file: "garden" with ``model``, "kitchen" keyword-only."""
    garden, kitchen = tmp_path / "garden", tmp_path / "kitchen"
    (garden / "bulbs").mkdir(parents=True)
    kitchen.mkdir()
    (garden / "bulbs" / "tulips.md").write_text(
        "# Tulips\n\nPlant tulip bulbs in October.\n\n# Care\n\nWater tulips once a week.\n",
        encoding="utf-8",
    )
    (kitchen / "soup.txt").write_text("Tulips have petals, edible in soup.", encoding="utf-8")
    path = tmp_path / "documents.sqlite3"
    index = DocumentIndex(path, embedder=_open(model))
    index.add("garden", garden)
    index.set_embed_model("garden", model)
    index.embedder = None
    index.add("kitchen", kitchen)
    index.close()
    return path


def test_collections_and_attachments_are_searched_together(tmp_path: Path, tiny_model: str) -> None:
    path = _collections(tmp_path, tiny_model)
    opened: list[str] = []

    def open_embedder(model: str) -> WordHashEmbedder:
        opened.append(model)
        return _open(model)

    retriever = Retriever(path, open_embedder=open_embedder, attachment_model=lambda: tiny_model)
    try:
        note = extract_text("note.md", b"# Tulips\n\nMy tulips bloomed in April.")
        attached = [AttachedText("sha-note", note)]
        found = retriever.search("tulips", ["garden", "kitchen", "gone"], attached, 6)
        passages = found.result(timeout=120)
        where = {(p.collection, p.file) for p in passages}
        assert ("garden", "bulbs/tulips.md") in where and ("kitchen", "soup.txt") in where
        assert ("", "note.md") in where  # an attachment: no collection, no path on disk
        tulip = next(p for p in passages if p.file == "bulbs/tulips.md" and p.locator == "Tulips")
        assert tulip.path == str((tmp_path / "garden" / "bulbs" / "tulips.md").resolve())
        assert "Water tulips once a week." in tulip.after and tulip.before == ""
        assert opened == [tiny_model]  # opened once: for the attachment and for "garden"

        # Asked again: the attachment is not chunked or embedded again.
        retriever.search("bloomed", [], attached, 3).result(timeout=60)

        def memory_chunks() -> list[tuple[str | None]]:
            assert retriever._memory is not None  # read on its own thread (sqlite3's rule)
            return retriever._memory.conn.execute("SELECT model FROM chunks").fetchall()

        rows = retriever._submit(memory_chunks).result(timeout=60)
        assert len(rows) == 1 and rows[0][0] is not None  # embedded: hybrid for attachments
        assert [c.name for c in retriever.collections().result(timeout=60)] == [
            "garden",
            "kitchen",
        ]
        assert retriever.roots().result(timeout=60)["kitchen"] == [
            str((tmp_path / "kitchen").resolve())
        ]
    finally:
        retriever.close()
    with pytest.raises(Exception, match="shut down"):
        retriever.search("x")


def test_an_embedding_model_that_cannot_be_opened_leaves_keyword_search(
    tmp_path: Path, tiny_model: str
) -> None:
    path = _collections(tmp_path, tiny_model)

    def broken(model: str) -> WordHashEmbedder:
        raise OSError(f"{model}: no such file")

    retriever = Retriever(path, open_embedder=broken, attachment_model=lambda: "moved.gguf")
    try:
        found = retriever.search("October bulbs", ["garden"], top_k=2).result(timeout=60)
        assert found[0].file == "bulbs/tulips.md" and found[0].locator == "Tulips"
    finally:
        retriever.close()


def test_merge_interleaves_rankings_by_rank() -> None:
    def p(name: str) -> Passage:
        return Passage(name, "", "", "", name, "", "", 0.0)

    merged = merge([[p("a1"), p("a2")], [p("b1"), p("b2"), p("b3")]], 4)
    assert [x.text for x in merged] == ["a1", "b1", "a2", "b2"]
    assert merge([[p("a1"), p("a2")]], 1) == [p("a1")]


def test_a_long_attachment_is_searched_by_keywords_without_waiting_for_embeddings(
    tmp_path: Path, tiny_model: str
) -> None:
    from app.documents.retrieval import MAX_EMBEDDED_CHUNKS

    opened: list[str] = []

    def open_embedder(model: str) -> WordHashEmbedder:
        opened.append(model)
        return _open(model)

    retriever = Retriever(
        tmp_path / "d.sqlite3", open_embedder=open_embedder, attachment_model=lambda: tiny_model
    )
    paragraphs = [f"Paragraph {i} is about the weather. " * 40 for i in range(MAX_EMBEDDED_CHUNKS)]
    long = extract_text(
        "long.txt", ("\n\n".join(paragraphs) + "\n\nKiwis nest in burrows.").encode()
    )
    attached = [AttachedText("sha-long", long)]

    def models() -> list[tuple[str | None]]:
        assert retriever._memory is not None
        rows = retriever._memory.conn.execute("SELECT DISTINCT model FROM chunks").fetchall()
        return [tuple(r) for r in rows]

    try:
        found = retriever.search("kiwis burrows", [], attached, 1).result(timeout=60)
        assert found[0].text.endswith("Kiwis nest in burrows.")
        assert retriever._submit(models).result(timeout=60) == [(None,)]  # no vectors
        retriever.search("weather", [], attached, 1).result(timeout=60)
        assert len(opened) == 1 and retriever._attached["sha-long"] == "word-hash:word-hash.gguf"
        assert retriever._submit(models).result(timeout=60) == [(None,)]  # not indexed again
    finally:
        retriever.close()
