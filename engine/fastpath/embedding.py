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

from pathlib import Path
from typing import Any

from engine.arch.hparams import HParams, check_fast_path, read_hparams
from engine.cache_folders import cache_root, gguf_cache_key, publish_folder, remove_other_versions
from engine.errors import UnsupportedModelError
from engine.fastpath.builder import ACCURACY_INT8, MS, GraphBuilder
from engine.fastpath.cache import write_graph_meta
from engine.fastpath.graph import GRAPH_VERSION, decoder_layer
from engine.fastpath.pipeline import RepackPipeline
from engine.fastpath.weights import WeightFile
from engine.gguf.reader import open_gguf

EMBED_GRAPH_VERSION = 1  # bump when this graph's layout changes: converted caches are rebuilt
META_FILE, MODEL_FILE, WEIGHTS_FILE = "meta.json", "model.onnx", "weights.bin"


def check_embedding_arch(hp: HParams) -> None:
    """UnsupportedModelError unless the embedding graph can run ``hp``'s architecture."""

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
        hidden, pending = decoder_layer(g, hp, hp.spec, i, hidden, pending)
    _, normed = g.add_norm(hidden, pending, "output_norm.weight", hp.rms_eps)
    g.nodes.append(helper.make_node("Identity", [normed], ["hidden"]))
    outputs = [helper.make_tensor_value_info("hidden", f32, ["batch", "seq", hp.hidden])]
    graph = helper.make_graph(g.nodes, f"hearth_embed_{hp.arch}", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def embedding_graph_folder(path: Path, accuracy: int = ACCURACY_INT8) -> Path:
    """Where the embedding graph of ``path`` lives (or will live)."""
    import onnxruntime

    version = f"e{EMBED_GRAPH_VERSION}g{GRAPH_VERSION}a{accuracy}-ort{onnxruntime.__version__}"
    return cache_root() / "onnx-embed" / f"{path.stem}-{gguf_cache_key(path)}-{version}"


def converted_embedding_graph(path: Path, accuracy: int = ACCURACY_INT8) -> Path:
    """The folder holding ``path``'s embedding graph and meta, converting once when needed.
    Written to a temporary folder and renamed into place (a crash leaves no half graph)."""

    target = embedding_graph_folder(path, accuracy)
    if (target / META_FILE).is_file():
        return target
    publish_folder(  # another process's finished graph is kept: it may be reading it
        target,
        lambda tmp: _write_graph(path, tmp, accuracy),
        keep=lambda t: (t / META_FILE).is_file(),
        source=path,
    )

    def alike(other: Path) -> bool:  # this file's older embedding graphs of this accuracy
        return other.name.count("-") == target.name.count("-") and f"a{accuracy}-" in other.name

    remove_other_versions(target, path, unmarked=True, alike=alike)
    return target


def _write_graph(path: Path, out: Path, accuracy: int) -> None:
    import onnx

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
