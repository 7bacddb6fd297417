"""A tiny random llama written as a real GGUF file (Q4_1 weights, Q8_0 tied embeddings).

For the fast-path conversion tests: it converts in well under a second, so cache reuse,
rebuild-on-change and fallback can be checked without the bundled model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HIDDEN, FFN, HEADS, KV_HEADS, LAYERS, VOCAB, CONTEXT = 64, 128, 4, 2, 2, 256, 1024


def write_tiny_gguf(
    path: Path, *, seed: int = 0, arch: str = "llama", matrix_type: str = "Q4_1"
) -> Path:
    """Write the tiny model to ``path``; ``matrix_type`` quantises the layer matrices."""
    import gguf

    rng = np.random.default_rng(seed)
    qtype = gguf.GGMLQuantizationType[matrix_type]
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(LAYERS)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(HIDDEN // HEADS)

    def matrix(name: str, rows: int, cols: int, kind: gguf.GGMLQuantizationType) -> None:
        data = (rng.standard_normal((rows, cols)) * 0.2).astype(np.float32)
        try:
            quantised = gguf.quants.quantize(data, kind)
        except (NotImplementedError, gguf.quants.QuantError):  # gguf-py cannot write it: random
            block, size = gguf.GGML_QUANT_SIZES[kind]
            quantised = rng.integers(0, 256, (rows, cols // block * size), dtype=np.uint8)
        writer.add_tensor(name, quantised, raw_dtype=kind)

    def vector(name: str) -> None:
        writer.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))

    kv = HIDDEN // HEADS * KV_HEADS
    matrix("token_embd.weight", VOCAB, HIDDEN, gguf.GGMLQuantizationType.Q8_0)
    for i in range(LAYERS):
        vector(f"blk.{i}.attn_norm.weight")
        vector(f"blk.{i}.ffn_norm.weight")
        for name, rows, cols in (
            ("attn_q", HIDDEN, HIDDEN),
            ("attn_k", kv, HIDDEN),
            ("attn_v", kv, HIDDEN),
            ("attn_output", HIDDEN, HIDDEN),
            ("ffn_gate", FFN, HIDDEN),
            ("ffn_up", FFN, HIDDEN),
            ("ffn_down", HIDDEN, FFN),
        ):
            matrix(f"blk.{i}.{name}.weight", rows, cols, qtype)
    vector("output_norm.weight")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
