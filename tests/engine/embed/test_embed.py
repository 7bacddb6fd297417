"""Sentence embeddings on the fast path's embedding graph, against the torch path.

A tiny random qwen3 GGUF (the Qwen3-Embedding architecture: q/k norms, head_dim != hidden /
heads) is embedded by `engine.embed.embedder` on both bodies: the ONNX Runtime graph with its
production int8 activations must give the same unit vectors as transformers' float32 body
(cosine > 0.999), a batch of mixed lengths (right-padded) the same as one text at a time, and
the vectors must survive a `app.documents.DocumentIndex` round trip (float16 BLOBs) with the
dense ranking the numpy cosine gives. No download: the file is written here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.embed.embedder import TextEmbedder, TorchBody, load_embedder
from engine.errors import ModelNotFoundError, UnsupportedModelError

TEXTS = [
    "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "The quick brown fox jumps over the lazy dog.",
    "短",
    "Retrieval splits documents into chunks and ranks them for a question. " * 3,
    "混合检索：关键词 + dense vectors, fused by reciprocal rank.",
]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """The tiny GGUF and its float32 transformers twin (exactly its dequantised weights)."""
    folder = tmp_path_factory.mktemp("embed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEARTH_CACHE_DIR", str(folder / "cache"))
        path = folder / "tiny-qwen3-embed.gguf"
        twin = write_tiny_model(path, "qwen3", "Q8_0")
        yield path, twin


@pytest.fixture(scope="module")
def fast(model_file: tuple[Path, Any]) -> TextEmbedder:
    return load_embedder(str(model_file[0]), backend="fast", max_tokens=64, batch_size=4)


@pytest.fixture(scope="module")
def exact(model_file: tuple[Path, Any], fast: TextEmbedder) -> TextEmbedder:
    """The torch path over the twin (what `load_embedder(backend="torch")` loads from the
    file, without transformers' slow GGUF dequantisation: the torch path's loading is tested
    with the chat models)."""
    return TextEmbedder(fast.loaded, TorchBody(model_file[1]), max_tokens=64)


@pytest.mark.parametrize("query", [False, True], ids=["document", "query"])
def test_fast_path_equals_the_torch_path(
    fast: TextEmbedder, exact: TextEmbedder, query: bool
) -> None:
    assert (fast.backend, exact.backend) == ("onnx", "torch")
    got, expected = fast.embed(TEXTS, query=query), exact.embed(TEXTS, query=query)
    assert got.shape == expected.shape == (len(TEXTS), fast.dim)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(expected, axis=1), 1.0, atol=1e-5)
    cosine = (got * expected).sum(axis=1)
    assert float(cosine.min()) > 0.999, cosine
    # and the texts are told apart: each is nearest to its own torch vector
    assert list((got @ expected.T).argmax(axis=1)) == list(range(len(TEXTS)))


def test_a_batch_equals_one_text_at_a_time(fast: TextEmbedder) -> None:
    batch = fast.embed(TEXTS, query=False)  # mixed lengths: right-padded rows
    single = np.stack([fast.embed([t], query=False)[0] for t in TEXTS])
    np.testing.assert_allclose(batch, single, atol=1e-5)


def test_queries_carry_the_instruction_and_cut_rows_still_end_with_the_end_token(
    fast: TextEmbedder,
) -> None:
    doc, query = fast.token_ids(TEXTS[0], query=False), fast.token_ids(TEXTS[0], query=True)
    assert len(query) > len(doc) and query[-len(doc) :] == doc
    long = fast.token_ids("word " * 500, query=False)
    assert len(long) == fast.max_tokens and long[-1] == doc[-1]
    vectors = fast.embed([TEXTS[0]], query=True), fast.embed([TEXTS[0]], query=False)
    assert float((vectors[0] * vectors[1]).sum()) < 0.9999  # the prefix changed the vector
    assert fast.embed([], query=False).shape == (0, fast.dim)


def test_vectors_survive_the_document_index(fast: TextEmbedder, tmp_path: Path) -> None:
    from app.documents import DocumentIndex

    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(TEXTS):
        (folder / f"{i}.txt").write_text(text, encoding="utf-8")
    index = DocumentIndex(tmp_path / "index.sqlite3", fast)
    try:
        report = index.add("c", folder)
        assert report.added == len(TEXTS) and not report.failed
        rows = index.conn.execute("SELECT text, vector, model FROM chunks ORDER BY id").fetchall()
        stored = np.stack([np.frombuffer(r[1], dtype=np.float16).astype(np.float32) for r in rows])
        assert {r[2] for r in rows} == {fast.name}
        fresh = fast.embed([r[0] for r in rows], query=False)
        assert float((stored * fresh).sum(axis=1).min()) > 0.9999  # float16 storage
        query = "首都和政治中心"
        order = np.argsort(-(stored @ fast.embed([query], query=True)[0]))
        hits = index.search(["c"], query, top_k=3, mode="dense")
        assert [h.text for h in hits] == [rows[i][0] for i in order[:3]]
    finally:
        index.close()


def test_the_fast_path_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises((UnsupportedModelError, ModelNotFoundError)):
        load_embedder(str(tmp_path / "folder"), backend="fast")


def test_a_catalogue_model_not_downloaded_names_the_download(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from engine.hub.embedding import load_embedding_models, resolve_embedding_model

    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    entry = load_embedding_models()[0]
    with pytest.raises(ModelNotFoundError, match="not downloaded"):
        resolve_embedding_model(entry.name)
    assert resolve_embedding_model(str(tmp_path)) == str(tmp_path)
