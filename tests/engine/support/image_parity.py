"""Test helper: the image-input parity cases, the same for the check and its fixture's refresh.

A case is a tiny random-weight language model (bench.synth, llama.cpp's layout, F32) and one
prompt: text, an "image" of 12 seeded random rows in a 3 x 4 token grid, text. The reference is
llama.cpp fed the same rows through a ``llama_batch`` with ``embd`` (Gemma: non-causal, as
libmtmd decodes a Gemma image; Qwen3.5: M-RoPE positions t, h, w as libmtmd places them):
the logits of the text after the image at `SAMPLED` vocabulary columns, and 16 greedy ids.
`refresh` writes them to ``data/image_parity.npz`` (needs llama_cpp):

    .venv/bin/python -m tests.engine.support.image_parity
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = ("gemma3", "gemma4", "qwen35", "qwen3vl")
MROPE = ("qwen35", "qwen3vl")  # image tokens take t, h, w positions, causally
BEFORE, AFTER = [1, 17, 230, 99, 12], [7, 811, 3, 45, 60]
GRID = (3, 4)
N_GREEDY = 16
FIXTURE = Path(__file__).parent.parent / "fastpath" / "data" / "image_parity.npz"


def write_model(family: str, path: Path) -> None:
    """The case's tiny F32 GGUF (seeded, so every machine writes the same file)."""
    if family == "gemma3":
        from bench.synth.core import write_tiny_model

        write_tiny_model(path, "gemma3", "F32")
    elif family == "gemma4":
        from bench.synth.gemma4 import write_tiny_gemma4

        write_tiny_gemma4(path, "F32")
    elif family == "qwen3vl":  # and two deepstack rows per image token
        from bench.synth.qwen3vl import write_tiny_qwen3vl

        write_tiny_qwen3vl(path, "F32", deepstack=2)
    else:
        from bench.synth.qwen35 import write_tiny_qwen35

        write_tiny_qwen35(path, "F32")


def image_rows(hidden: int) -> np.ndarray:
    """The stand-in image: (12, hidden) seeded rows, as a projector's output would be
    (Qwen3-VL: ``hidden`` counts the deepstack rows after the embedding's)."""
    rng = np.random.default_rng(1)
    return (rng.standard_normal((GRID[0] * GRID[1], hidden)) * 0.5).astype(np.float32)


def sampled(vocab: int) -> np.ndarray:
    """The vocabulary columns kept in the fixture (512 seeded ones)."""
    return np.sort(np.random.default_rng(7).choice(vocab, 512, replace=False))


def llama_cpp_reference(path: Path, rows: np.ndarray, family: str) -> tuple[np.ndarray, list[int]]:
    """llama.cpp's logits (len(AFTER), V) after the image and its 16 greedy ids."""
    import llama_cpp as lc

    lc.llama_backend_init()
    model = lc.llama_model_load_from_file(str(path).encode(), lc.llama_model_default_params())
    params = lc.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 256, 512, 512
    params.n_threads = params.n_threads_batch = 2
    params.swa_full = True
    ctx = lc.llama_init_from_model(model, params)
    vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model))
    state = {"pos": 0}

    def text(ids: list[int]) -> np.ndarray:
        batch = lc.llama_batch_init(len(ids), 0, 1)
        batch.n_tokens = len(ids)
        for i, token in enumerate(ids):
            batch.token[i], batch.pos[i] = token, state["pos"] + i
            batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = 1, 0, 1
        assert lc.llama_decode(ctx, batch) == 0
        out = [
            np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, i), (vocab,)).copy()
            for i in range(len(ids))
        ]
        lc.llama_batch_free(batch)
        state["pos"] += len(ids)
        return np.stack(out)

    text(BEFORE)
    _image(lc, ctx, rows, state, family)
    logits = text(AFTER)
    ids, last = [], logits[-1]
    for _ in range(N_GREEDY):
        ids.append(int(np.argmax(last)))
        last = text([ids[-1]])[-1]
    lc.llama_free(ctx)
    lc.llama_model_free(model)
    return logits, ids


def _image(lc: Any, ctx: Any, rows: np.ndarray, state: dict[str, int], family: str) -> None:
    n, pos = len(rows), state["pos"]
    batch = lc.llama_batch_init(n, rows.shape[1], 1)
    batch.n_tokens = n
    flat = np.ascontiguousarray(rows, dtype=np.float32).reshape(-1)
    ctypes.memmove(batch.embd, flat.ctypes.data, flat.nbytes)
    mrope = family in MROPE
    positions = (ctypes.c_int32 * (4 * n))()  # M-RoPE: t, h, w, e per token (libmtmd)
    for k in range(n):
        y, x = divmod(k, GRID[1])
        positions[k], positions[k + n], positions[k + 2 * n] = pos, pos + y, pos + x
        batch.n_seq_id[k], batch.seq_id[k][0], batch.logits[k] = 1, 0, int(k == n - 1)
        if not mrope:
            batch.pos[k] = pos + k
    if mrope:
        batch.pos = ctypes.cast(positions, type(batch.pos))
    lc.llama_set_causal_attn(ctx, mrope)  # mtmd: Gemma's images non-causal
    assert lc.llama_decode(ctx, batch) == 0
    lc.llama_set_causal_attn(ctx, True)
    state["pos"] += max(GRID) if mrope else n


def refresh() -> None:
    """Write the fixture from llama.cpp (see the module docstring)."""
    import tempfile

    from engine.gguf.reader import open_gguf

    arrays: dict[str, np.ndarray] = {}
    for family in FAMILIES:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "m.gguf"
            write_model(family, path)
            reader = open_gguf(path, string_arrays=False)
            hidden = int(reader.get(f"{reader.architecture}.embedding_length"))
            hidden *= 1 + int(reader.get(f"{reader.architecture}.n_deepstack_layers") or 0)
            reader.close()
            logits, ids = llama_cpp_reference(path, image_rows(hidden), family)
        columns = sampled(logits.shape[1])
        arrays[f"{family}_columns"] = columns
        arrays[f"{family}_logits"] = logits[:, columns]
        arrays[f"{family}_argmax"] = logits.argmax(axis=1)
        arrays[f"{family}_greedy"] = np.array(ids)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FIXTURE, **arrays)
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    refresh()
