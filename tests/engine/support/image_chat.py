"""Test helper: a tiny model + mmproj pair and a picture, and libmtmd's greedy reply to it.

`make_case` writes, for a family, a tiny random-weight language model (bench.synth) with an
``mmproj-*.gguf`` beside it (bench.synth.mmproj, its width the model's) and a seeded 120 x 90
picture. `mtmd_greedy` is llama.cpp's own multimodal path on the same files and prompt text
(libmtmd tokenizes the marker, encodes, decodes Gemma's image non-causally, places Qwen's
M-RoPE positions): 16 greedy ids. `refresh` pins them in ``loop/data/image_chat.json``:

    .venv/bin/python -m tests.engine.support.image_chat
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np

from tests.engine.support import image_parity

PROJECTORS = {  # family -> bench.synth.mmproj shape (Qwen3-VL: two deepstack mergers)
    "gemma3": "gemma3", "gemma4": "gemma4v", "qwen35": "qwen3vl", "qwen3vl": "qwen3vl-deepstack"
}  # fmt: skip
QUESTION = "What is this?"
FIXTURE = Path(__file__).parent.parent / "loop" / "data" / "image_chat.json"


def make_case(family: str, folder: Path) -> tuple[Path, Path, Path]:
    """(model, mmproj, picture) written into ``folder``."""
    from PIL import Image

    from bench.synth.mmproj import tiny_shape, write_mmproj
    from engine.gguf.reader import open_gguf

    model = folder / "model.gguf"
    image_parity.write_model(family, model)
    reader = open_gguf(model, arrays=False)
    width = int(reader.get(f"{reader.architecture}.embedding_length"))
    reader.close()
    shape = tiny_shape(PROJECTORS[family], proj_dim=width)
    mmproj = write_mmproj(folder / "mmproj-model.gguf", shape)
    rng = np.random.default_rng(3)
    picture = folder / "pic.png"
    Image.fromarray(rng.integers(0, 255, (90, 120, 3), dtype=np.uint8)).save(picture)
    return model, mmproj, picture


def mtmd_greedy(model: Path, mmproj: Path, picture: Path, text: str, n: int = 16) -> list[int]:
    """libmtmd's greedy ids for ``text`` (holding one ``<__media__>``) with ``picture``."""
    import llama_cpp as lc
    from llama_cpp import mtmd_cpp as m
    from PIL import Image

    lc.llama_backend_init()
    lm = lc.llama_model_load_from_file(str(model).encode(), lc.llama_model_default_params())
    cp = lc.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.swa_full = 512, 512, 512, True
    cp.n_threads = cp.n_threads_batch = 2
    lctx = lc.llama_init_from_model(lm, cp)
    mp = m.mtmd_context_params_default()
    mp.use_gpu, mp.n_threads, mp.flash_attn_type, mp.warmup = False, 2, 0, False
    mctx = m.mtmd_init_from_file(str(mmproj).encode(), lm, mp)
    rgb = np.ascontiguousarray(Image.open(picture).convert("RGB"))
    h, w, _ = rgb.shape
    bitmap = m.mtmd_bitmap_init(w, h, (ctypes.c_uint8 * rgb.size).from_buffer_copy(rgb.tobytes()))
    chunks = m.mtmd_input_chunks_init()
    prompt = m.mtmd_input_text()
    raw = text.encode()
    prompt.text, prompt.text_len = raw, len(raw)
    prompt.add_special, prompt.parse_special = False, True
    bitmaps = (m.mtmd_bitmap_p_ctypes * 1)(bitmap)
    assert m.mtmd_tokenize(mctx, chunks, ctypes.byref(prompt), bitmaps, 1) == 0
    n_past = lc.llama_pos(0)
    assert m.mtmd_helper_eval_chunks(mctx, lctx, chunks, 0, 0, 512, True, ctypes.byref(n_past)) == 0
    vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(lm))
    last = np.ctypeslib.as_array(lc.llama_get_logits_ith(lctx, -1), (vocab,)).copy()
    pos, ids = n_past.value, []
    for _ in range(n):
        ids.append(int(last.argmax()))
        batch = lc.llama_batch_init(1, 0, 1)
        batch.n_tokens, batch.token[0], batch.pos[0] = 1, ids[-1], pos
        batch.n_seq_id[0], batch.seq_id[0][0], batch.logits[0] = 1, 0, 1
        assert lc.llama_decode(lctx, batch) == 0
        lc.llama_batch_free(batch)
        pos += 1
        last = np.ctypeslib.as_array(lc.llama_get_logits_ith(lctx, 0), (vocab,)).copy()
    m.mtmd_input_chunks_free(chunks)
    m.mtmd_bitmap_free(bitmap)
    m.mtmd_free(mctx)
    lc.llama_free(lctx)
    lc.llama_model_free(lm)
    return ids


def refresh() -> None:
    import tempfile

    from engine.engine import Engine
    from engine.text import render_prompt
    from engine.types import ImageRef, Message

    pinned: dict[str, list[int]] = {}
    for family in PROJECTORS:
        with tempfile.TemporaryDirectory() as folder:
            model, mmproj, picture = make_case(family, Path(folder))
            engine = Engine(str(model), context_window=512)
            message = Message("user", QUESTION, images=(ImageRef(str(picture)),))
            text = render_prompt(engine.tokenizer, (message,))
            engine.close()
            pinned[family] = mtmd_greedy(model, mmproj, picture, text)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(pinned, indent=1) + "\n")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    refresh()
