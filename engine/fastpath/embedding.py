"""The fast path's embedding graph: a GGUF's transformer body with no head and no KV cache kept.

Owns `build_embedding_model` (the decoder layers of `engine.fastpath.graph`, then the final
norm over every position; output ``hidden`` (batch, seq, hidden), pooling is the caller's),
its conversion, cached on disk beside the chat graphs (`converted_embedding_graph`: same
streaming repack, own folder name so neither cache evicts the other), and `EmbeddingSession`,
which runs right-padded batches of token ids through it. Each call is a fresh prefill: the
attention's key/value inputs are empty and its outputs are dropped, so nothing is cached
between calls and rows of one batch never see each other (GroupQueryAttention's per-row
``seqlens_k``; a row's padding comes after its tokens, and attention is causal).

Runs the dense architectures of the fast path (qwen3 for Qwen3-Embedding, llama, qwen2,
gemma2/3, phi3 and the MoE ones); hybrid (recurrent) and gemma4 layers are refused with
`UnsupportedModelError`. Does not own tokenizing, pooling or normalising (`engine.embed`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.errors import UnsupportedModelError
from engine.fastpath.graph import ACCURACY_INT8, GraphBuilder
from engine.runners.onnx_runner import EmbeddingSource, GraphMeta

EMBED_GRAPH_VERSION = 1  # bump when this graph's layout changes: converted caches are rebuilt
META_FILE, MODEL_FILE, WEIGHTS_FILE = "meta.json", "model.onnx", "weights.bin"


def check_embedding_arch(hp: HParams) -> None:
    """UnsupportedModelError unless the embedding graph can run ``hp``'s architecture."""
    from engine.arch.hparams import check_fast_path

    check_fast_path(hp)
    if hp.spec.hybrid or hp.spec.name == "gemma4" or hp.per_layer_dim:
        raise UnsupportedModelError(
            f"the fast path's embedding graph does not run {hp.arch} layers; "
            "use the torch path for this embedding model"
        )


def build_embedding_model(
    reader: Any, hp: HParams, weights: Any, accuracy: int = ACCURACY_INT8
) -> Any:
    """The ONNX model: inputs_embeds, seqlens_k, total_sequence_length, rotary tables in;
    ``hidden`` (batch, seq, hidden) out: the final-normed state of every position."""
    from onnx import TensorProto, helper

    from engine.fastpath.graph import MS, _layer

    check_embedding_arch(hp)
    g = GraphBuilder(weights, reader, accuracy)
    f32 = TensorProto.FLOAT
    half, half_local = hp.rope_dim // 2, (hp.rope_dim_swa or hp.rope_dim) // 2
    inputs = [
        helper.make_tensor_value_info("inputs_embeds", f32, ["batch", "seq", hp.hidden]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("cos_cache", f32, ["window", half]),
        helper.make_tensor_value_info("sin_cache", f32, ["window", half]),
    ]
    if hp.has_local_rope:
        inputs += [
            helper.make_tensor_value_info(n, f32, ["window", half_local])
            for n in ("cos_cache_local", "sin_cache_local")
        ]
    hidden, pending = "inputs_embeds", None
    for i in range(hp.n_layers):
        cache: list[str | int | None] = ["batch", hp.kv_heads_at(i), "past", hp.head_dim_at(i)]
        # Empty past K/V (0 positions), fed once per call: GroupQueryAttention takes them as
        # the cache to append to; its present outputs are not graph outputs (nothing kept).
        inputs += [
            helper.make_tensor_value_info(f"past_{k}.{i}", f32, cache) for k in ("key", "value")
        ]
        hidden, pending = _layer(g, hp, hp.spec, i, hidden, pending)
    _, normed = g.add_norm(hidden, pending, "output_norm.weight", hp.rms_eps)
    g.nodes.append(helper.make_node("Identity", [normed], ["hidden"]))
    outputs = [helper.make_tensor_value_info("hidden", f32, ["batch", "seq", hp.hidden])]
    graph = helper.make_graph(g.nodes, f"hearth_embed_{hp.arch}", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def embedding_graph_folder(path: Path, accuracy: int = ACCURACY_INT8) -> Path:
    """Where the embedding graph of ``path`` lives (or will live)."""
    import onnxruntime

    from engine.cache_folders import cache_root, gguf_cache_key
    from engine.fastpath.graph import GRAPH_VERSION

    version = f"e{EMBED_GRAPH_VERSION}g{GRAPH_VERSION}a{accuracy}-ort{onnxruntime.__version__}"
    return cache_root() / "onnx-embed" / f"{path.stem}-{gguf_cache_key(path)}-{version}"


def converted_embedding_graph(path: Path, accuracy: int = ACCURACY_INT8) -> Path:
    """The folder holding ``path``'s embedding graph and meta, converting once when needed.
    Written to a temporary folder and renamed into place (a crash leaves no half graph)."""
    from engine.cache_folders import mark_source, remove_other_versions

    target = embedding_graph_folder(path, accuracy)
    if (target / META_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        _write_graph(path, tmp, accuracy)
        mark_source(tmp, path)
        if (target / META_FILE).is_file():  # another process finished it meanwhile: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

    def alike(other: Path) -> bool:  # this file's older embedding graphs of this accuracy
        return other.name.count("-") == target.name.count("-") and f"a{accuracy}-" in other.name

    remove_other_versions(target, path, unmarked=True, alike=alike)
    return target


def _write_graph(path: Path, out: Path, accuracy: int) -> None:
    import onnx

    from engine.arch.hparams import read_hparams
    from engine.fastpath.cache import write_graph_meta
    from engine.fastpath.pipeline import RepackPipeline
    from engine.fastpath.weights import WeightFile
    from engine.gguf.metadata import open_gguf

    reader = open_gguf(path, string_arrays=False)
    hp = read_hparams(reader)
    check_embedding_arch(hp)
    tensors = [t for t in reader.tensors if t.name != "output.weight"]  # no head here
    pipeline = RepackPipeline(tensors)
    weights = WeightFile(out / WEIGHTS_FILE, pipeline)
    try:
        model = build_embedding_model(reader, hp, weights, accuracy)
    finally:
        pipeline.close()
        weights.close()
    onnx.save(model, str(out / MODEL_FILE))
    write_graph_meta(out, reader, hp)


class EmbeddingSession:
    """Final hidden states of right-padded token rows, on ONNX Runtime's CPU provider.

    ``window`` is the longest row it will take (the rotary tables' length). Not thread-safe:
    one thread at a time, as every runner.
    """

    def __init__(
        self,
        source: Path,
        *,
        window: int = 512,
        threads: int | None = None,
        accuracy: int = ACCURACY_INT8,
    ) -> None:
        import onnxruntime as ort

        from engine.arch.hparams import rope_tables
        from engine.fastpath.weights import PageReleaser
        from engine.runners.onnx_runner import _EmbeddingTable, cpu_session_options

        folder = converted_embedding_graph(source, accuracy)
        meta = GraphMeta(**json.loads((folder / META_FILE).read_text(encoding="utf-8")))
        self.hparams = HParams.from_json(meta.hparams)
        self.window = min(window, meta.context_window)
        self.dim = self.hparams.hidden
        self._table = _EmbeddingTable(source, EmbeddingSource(**meta.embedding))
        options = cpu_session_options(ort, threads)
        self._session = ort.InferenceSession(
            str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        # ORT keeps the weights' mapped pages beside its prepacked copy, as for the chat
        # graph (`engine.fastpath.cache.open_runner`): hand them back once it is open.
        PageReleaser(folder / WEIGHTS_FILE).release()
        names = {i.name for i in self._session.get_inputs()}
        self._rope: dict[str, np.ndarray] = {}
        for suffix, local in (("", False), ("_local", True)):
            if f"cos_cache{suffix}" in names:
                cos, sin = rope_tables(self.hparams, self.window, local)
                self._rope[f"cos_cache{suffix}"], self._rope[f"sin_cache{suffix}"] = cos, sin

    def hidden(self, rows: Sequence[Sequence[int]], pad_id: int = 0) -> np.ndarray:
        """(len(rows), max length, hidden) float32: each row's final-normed states; positions
        past a row's end are padding (garbage, never read)."""
        lengths = [len(r) for r in rows]
        if not rows or min(lengths) < 1 or max(lengths) > self.window:
            raise ValueError(f"rows must hold 1..{self.window} tokens, got lengths {lengths}")
        width = max(lengths)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)  # (B, T)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
        embeds = self._table.lookup(ids.reshape(-1).tolist()).reshape(
            len(rows), width, -1
        )  # (B, T, H)
        feeds: dict[str, Any] = {
            "inputs_embeds": embeds,
            "seqlens_k": np.array(lengths, dtype=np.int32) - 1,
            "total_sequence_length": np.array(width, dtype=np.int32),
            **self._rope,
        }
        hp = self.hparams
        for i in range(hp.n_layers):
            empty = np.zeros((len(rows), hp.kv_heads_at(i), 0, hp.head_dim_at(i)), np.float32)
            feeds[f"past_key.{i}"] = feeds[f"past_value.{i}"] = empty
        (hidden,) = self._session.run(["hidden"], feeds)
        return np.asarray(hidden, dtype=np.float32)

    def last_states(self, rows: Sequence[Sequence[int]], pad_id: int = 0) -> np.ndarray:
        """(len(rows), hidden): each row's final-normed state at its last token."""
        states = self.hidden(rows, pad_id)
        last = np.array([len(r) - 1 for r in rows])
        return np.asarray(states[np.arange(len(rows)), last])
