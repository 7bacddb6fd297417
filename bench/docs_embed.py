"""Embedding speed side by side: the fast path, the torch path and llama.cpp on one GGUF.

Owns one recipe applied to each contender, each in its own subprocess (its own threads, peak
RSS and OpenMP policy): the same chunks of ~``CHUNK_TOKENS`` tokens of the docs_qa passages
(Chinese and English alternating, cut with the model's own tokenizer), embedded in batches of
8 after one warm-up text. Contenders: ``fast`` (`engine.embed` on the ONNX Runtime embedding
graph), ``torch`` (transformers float32), ``llama.cpp`` (llama-cpp-python
``Llama(embedding=True)``, last-token pooling, its default OpenMP policy) and
``llama.cpp-passive`` (``OMP_WAIT_POLICY=passive``, better when other work shares the cores).
Each reports embeddings/s, tokens/s, CPU seconds per embedding (all its threads: on a shared
machine the wall-clock rates follow the load, the CPU time much less), open seconds and peak
RSS. ``python -m bench.docs_embed
KIND GGUF TEXTS.json`` is the child. Does not own the recall figures (`bench.docs`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNK_TOKENS = 256
BATCH = 8
KINDS = ("fast", "torch", "llama.cpp", "llama.cpp-passive")
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "docs_qa"


def speed_texts(gguf: Path, n: int, tokens: int = CHUNK_TOKENS) -> list[str]:
    """``n`` chunks of ``tokens`` tokens (by ``gguf``'s tokenizer), zh and en alternating."""
    from engine.loader import load_model

    tokenizer = load_model(str(gguf), device="cpu", context_window=512).tokenizer
    pools = []
    for name in ("cmrc2018_dev_subset.json", "squad_dev_subset.json"):
        qa = json.loads((DATA / name).read_text(encoding="utf-8"))
        pools.append(tokenizer.encode("\n\n".join(p["text"] for p in qa["passages"])))
    texts = []
    for i in range(n):
        ids = pools[i % 2]
        start = (i // 2) * tokens % max(1, len(ids) - tokens)
        texts.append(tokenizer.decode(ids[start : start + tokens]))
    return texts


def compare(gguf: Path, n: int, kinds: tuple[str, ...] = KINDS) -> list[dict[str, Any]]:
    """Each contender's figures (or ``{"error": ...}``), measured one after another."""
    texts = speed_texts(gguf, n)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hearth-embed-speed-") as tmp:
        source = Path(tmp) / "texts.json"
        source.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        for kind in kinds:
            rows.append({"kind": kind, **run_child(kind, gguf, source)})
    return rows


def run_child(kind: str, gguf: Path, texts: Path, timeout_s: float = 1800) -> dict[str, Any]:
    env = dict(os.environ)
    if kind.startswith("llama.cpp"):
        env["HEARTH_OMP_PASSIVE"] = "0"  # engine/__init__ must not choose the peer's policy
        env.pop("OMP_WAIT_POLICY", None)
        if kind == "llama.cpp-passive":
            env["OMP_WAIT_POLICY"] = "passive"
    from bench.measure import json_child

    cmd = [sys.executable, "-m", "bench.docs_embed", kind, str(gguf), str(texts)]
    return json_child(cmd, env, timeout_s)


def measure(kind: str, gguf: Path, texts: list[str]) -> dict[str, Any]:
    """One contender in this process."""
    from bench.peers import peak_rss_mb

    start = time.perf_counter()
    embed, count = _contender(kind, gguf)
    open_s = time.perf_counter() - start
    embed(texts[:1])  # warm: first-run allocations, thread pools
    start, cpu = time.perf_counter(), time.process_time()
    vectors = embed(texts)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    tokens = sum(count(t) for t in texts)
    return {
        "embeddings_per_s": round(len(texts) / seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
        "tokens_per_chunk": round(tokens / len(texts), 1),
        "cpu_s_per_embedding": round(cpu / len(texts), 2),  # all threads: load-independent-ish
        "chunks": len(texts),
        "dim": len(vectors[0]),
        "open_s": round(open_s, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
    }


def _contender(kind: str, gguf: Path) -> tuple[Any, Any]:
    """(embed(texts) -> vectors, count(text) -> tokens) for ``kind``."""
    if kind in ("fast", "torch"):
        from engine.embed.embedder import Backend, load_embedder

        backend: Backend = "fast" if kind == "fast" else "torch"
        e = load_embedder(str(gguf), backend=backend, max_tokens=512, batch_size=BATCH)
        return (lambda texts: e.embed(texts, query=False)), (
            lambda t: len(e.token_ids(t, query=False))
        )
    import llama_cpp

    from engine.runners.session_options import physical_cores

    llm = llama_cpp.Llama(
        str(gguf), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_LAST,
        n_ctx=1024, n_batch=512, n_ubatch=512,  # its defaults: 2 chunks a batch, no padding
        n_threads=physical_cores(), verbose=False,
    )  # fmt: skip
    return (lambda texts: llm.embed(texts)), (lambda t: len(llm.tokenize(t.encode())))


def main(argv: list[str]) -> int:
    kind, gguf, texts = argv[0], Path(argv[1]), Path(argv[2])
    result = measure(kind, gguf, json.loads(texts.read_text(encoding="utf-8")))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
