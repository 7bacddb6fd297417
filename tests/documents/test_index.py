"""The document index: keyword ranking on a fixed corpus, rescans, deleted files, dense
mechanics with a tiny random qwen3 embedder, and the ``python -m app docs`` commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from app.documents import DocumentError, DocumentIndex, extract_text
from app.documents.cli import add_docs_parser  # noqa: F401 - the CLI module imports cleanly
from tests.documents.files import write_docx, write_pdf

CORPUS = {
    "rivers.md": "# Rivers\n## Yangtze\nThe Yangtze is the longest river in Asia.\n\n"
    "## Nile\nThe Nile flows north through Egypt into the Mediterranean.\n",
    "cities.txt": "北京是中国的首都，有三千年的历史。\n\n上海是中国最大的城市，也是金融中心。",
    "food.txt": "Dumplings are eaten at the Spring Festival. 饺子是春节的传统食物。",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    write_pdf(folder / "report.pdf", ["Quarterly revenue grew by nine percent.", "Costs fell."])
    write_docx(folder / "zebras.docx")
    (folder / "junk.txt").write_bytes(bytes(range(256)) * 4)
    return folder


def _top(index: DocumentIndex, query: str, k: int = 3) -> list[tuple[str, str]]:
    return [(Path(h.file).name, h.locator) for h in index.search(["c"], query, k, mode="keyword")]


def test_keyword_ranking_on_a_fixed_corpus(corpus: Path, tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    report = index.add("c", corpus)
    # The binary file is skipped, saying why; it is not counted as added.
    assert (report.added, len(report.skipped), report.failed) == (5, 1, [])
    assert "junk.txt: this is binary data" in report.skipped[0][1]
    assert _top(index, "Which river flows through Egypt?")[0] == ("rivers.md", "Rivers › Nile")
    assert _top(index, "中国的首都在哪里")[0] == ("cities.txt", "")
    assert _top(index, "金融中心")[0] == ("cities.txt", "")
    assert _top(index, "春节吃什么")[0] == ("food.txt", "")
    assert _top(index, "revenue growth")[0] == ("report.pdf", "page 1")
    assert _top(index, "where do zebras live")[0] == ("zebras.docx", "Zebras › Habitat")
    assert index.search(["c"], "the of and", 3) == []  # stopwords only: no keyword
    with pytest.raises(DocumentError, match=r"no collection named 'x'"):
        index.search(["x"], "river")


def test_rescan_picks_up_changed_new_and_deleted_files(corpus: Path, tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    index.add("c", corpus)
    assert index.rescan("c").unchanged == 6
    (corpus / "food.txt").write_text("Noodles are long.", encoding="utf-8")
    os.utime(corpus / "food.txt", (1, 1))  # a new mtime even on a coarse clock
    (corpus / "new.md").write_text("# New\nfresh words here", encoding="utf-8")
    (corpus / "cities.txt").unlink()
    report = index.rescan("c")
    assert (report.added, report.updated, report.removed) == (1, 1, 1)
    assert _top(index, "noodles")[0][0] == "food.txt"
    assert _top(index, "dumplings") == []
    assert [c.name for c in index.collections()] == ["c"]
    assert index.remove("c") and index.collections() == []


def test_a_file_deleted_after_indexing_is_left_out_and_marked(corpus: Path, tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    index.add("c", corpus)
    (corpus / "rivers.md").unlink()
    assert all(Path(h.file).name != "rivers.md" for h in index.search(["c"], "Nile Egypt", 5))
    status = {Path(f.path).name: (f.status, f.error) for f in index.files("c")}
    assert status["rivers.md"] == (
        "missing",
        "the file is gone (moved or deleted); rescan to drop it",
    )


def test_text_without_a_file_is_indexed_under_its_key(tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    doc = extract_text("paste.txt", b"The launch code is tangerine.")
    assert index.add_document("chat:1", doc, key="paste.txt") == 1
    hits = index.search(["chat:1"], "launch code", 1)
    assert [(h.file, h.text) for h in hits] == [("paste.txt", "The launch code is tangerine.")]


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory: pytest.TempPathFactory) -> object:
    from app.bridge import open_embedder
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("embed") / "tiny-qwen3.gguf"
    write_tiny_model(path, "qwen3", "Q8_0")  # random weights: checks mechanics, not quality
    return open_embedder(str(path), max_tokens=128)


def test_dense_and_hybrid_mechanics_with_a_tiny_embedder(
    corpus: Path, tmp_path: Path, tiny_embedder: object
) -> None:
    index = DocumentIndex(tmp_path / "documents.sqlite3", embedder=tiny_embedder)  # type: ignore[arg-type]
    index.add("c", corpus)
    rows = index.conn.execute("SELECT text, locator, vector, model FROM chunks").fetchall()
    assert rows and all(r["model"] == tiny_embedder.name for r in rows)  # type: ignore[attr-defined]
    text, locator, blob = rows[0]["text"], rows[0]["locator"], rows[0]["vector"]
    stored = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    fresh = tiny_embedder.embed([f"{locator}\n{text}" if locator else text], query=False)[0]  # type: ignore[attr-defined]
    assert stored.shape == (128,) and np.abs(stored - fresh).max() < 2e-3
    dense = index.search(["c"], "river in Asia", 4, mode="dense")
    assert len(dense) == 4 and [h.score for h in dense] == sorted(
        (h.score for h in dense), reverse=True
    )
    hybrid = index.search(["c"], "Which river flows through Egypt?", 3, mode="hybrid")
    keyword = index.search(["c"], "Which river flows through Egypt?", 3, mode="keyword")
    assert hybrid[0].chunk_id in {h.chunk_id for h in keyword + dense} and len(hybrid) == 3


def test_cli_add_search_list_remove(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.__main__ import main

    where = ["--index", str(tmp_path / "cli.sqlite3")]
    assert main(["docs", "add", str(corpus), "--collection", "notes", "--json", *where]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert (summary["added"], summary["failed"]) == (5, []) and '"progress"' in err
    assert summary["skipped"][0][1].startswith("junk.txt: this is binary data")
    assert main(["docs", "rescan", "notes", *where]) == 0
    assert capsys.readouterr().out.startswith(
        "0 added, 0 updated, 6 unchanged, 0 removed, 0 skipped, 0 failed, 0 chunks"
    )
    assert main(["docs", "search", "notes", "Nile Egypt", "--top", "2", "--json", *where]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert Path(hits[0]["file"]).name == "rivers.md" and hits[0]["locator"] == "Rivers › Nile"
    assert set(hits[0]) == {"file", "locator", "text", "score", "bm25", "cosine"}
    assert hits[0]["bm25"] > 0 and hits[0]["cosine"] is None  # no embedding model here
    assert main(["docs", "list", *where]) == 0
    listed = capsys.readouterr().out
    assert "notes\t6 files\t" in listed and "\ten " in listed  # its languages end the line
    assert main(["docs", "list", "--json", *where]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert {s["tag"] for s in row["languages"]} >= {"en", "zh-Hans"}
    assert main(["docs", "remove", "notes", *where]) == 0
    assert main(["docs", "search", "notes", "x", *where]) == 1
    assert "error: no collection named 'notes'" in capsys.readouterr().err


def test_background_indexer_reports_progress_and_done_off_the_caller_thread(
    corpus: Path, tmp_path: Path
) -> None:
    import threading

    from app.documents import CollectionIndexer, IndexReport

    seen: list[tuple[str, int, int, str]] = []
    done: list[tuple[str, object]] = []
    caller = threading.get_ident()
    threads: set[int] = set()

    def progress(collection: str, p: object) -> None:
        threads.add(threading.get_ident())
        seen.append((collection, p.done, p.total, Path(p.file).name))  # type: ignore[attr-defined]

    indexer = CollectionIndexer(
        tmp_path / "bg.sqlite3", on_progress=progress, on_done=lambda c, r: done.append((c, r))
    )
    indexer.add("c", corpus).result(timeout=60)
    indexer.rescan("nope").result(timeout=60)
    indexer.close()
    assert caller not in threads
    assert seen[0] == ("c", 0, 6, "cities.txt") and seen[-1] == ("c", 6, 6, "")
    report = done[0][1]
    assert isinstance(report, IndexReport) and report.added == 5 and len(report.skipped) == 1
    assert str(done[1][1]) == "no collection named 'nope'"


def test_cli_summary_counts_in_words() -> None:
    from app.documents.cli import summary
    from app.documents.index import IndexReport

    one = IndexReport(added=1, chunks=1, skipped=[("junk.txt", "binary")])
    expected = "1 added, 0 updated, 0 unchanged, 0 removed, 1 skipped, 0 failed, 1 chunk"
    assert summary(one) == expected
    assert summary(IndexReport(chunks=40, cancelled=True)).endswith("40 chunks (stopped early)")
