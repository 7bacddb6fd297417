"""llama.cpp's libmtmd (through llama-cpp-python's ``mtmd_cpp``) encoding one image: the peer.

Owns calling libmtmd the way llama.cpp's own tools do (a text model for the embedding width, an
mtmd context on the mmproj, the prompt ``<__media__>`` tokenised into chunks, the image chunk
encoded, ``mtmd_get_output_embd`` read back) and returning the image's token count and its
embeddings, one row per image token. Flash attention is off by default so the reference is
float32 attention (on a CPU libmtmd's default turns it on and rounds K and V to f16); the
benchmark asks for the default, libmtmd's fastest.

Does not own Hearth's encoder (`engine.vision`) nor the synthetic files (`bench.synth.mmproj`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class MtmdImage:
    """What libmtmd made of one image."""

    n_tokens: int
    nx: int  # tokens across (the grid libmtmd reports)
    ny: int
    embeddings: np.ndarray  # (n_tokens, width) float32
    seconds: float = 0.0  # mtmd_tokenize (pre-processing) + mtmd_encode_chunk, no loading


def mtmd_encode(
    mmproj: Path,
    text_model: Path,
    rgb: np.ndarray,
    *,
    min_tokens: int = -1,
    max_tokens: int = -1,
    threads: int = 2,
    flash_attn: int = 0,
) -> MtmdImage:
    """Encode ``rgb`` ((H, W, 3) uint8) with libmtmd; -1 token limits keep its defaults.

    ``flash_attn``: 0 off (the float32 reference), -1 libmtmd's default (on for a CPU: its best
    speed, K and V rounded to f16), 1 on."""
    import llama_cpp
    from llama_cpp import mtmd_cpp as m

    with _quiet():
        llama_cpp.llama_backend_init()
        mparams = llama_cpp.llama_model_default_params()
        model = llama_cpp.llama_model_load_from_file(str(text_model).encode(), mparams)
        if not model:
            raise RuntimeError(f"llama.cpp could not load {text_model}")
        params = m.mtmd_context_params_default()
        params.use_gpu = False
        params.print_timings = False
        params.n_threads = threads
        params.flash_attn_type = flash_attn  # LLAMA_FLASH_ATTN_TYPE_{AUTO,DISABLED,ENABLED}
        params.warmup = False
        params.image_min_tokens = min_tokens
        params.image_max_tokens = max_tokens
        ctx = m.mtmd_init_from_file(str(mmproj).encode(), model, params)
    if not ctx:
        llama_cpp.llama_model_free(model)
        raise RuntimeError(f"libmtmd refused {mmproj}")
    try:
        width = int(llama_cpp.llama_model_n_embd_inp(model))
        return _encode(m, ctx, np.ascontiguousarray(rgb, dtype=np.uint8), width)
    finally:
        m.mtmd_free(ctx)
        llama_cpp.llama_model_free(model)


def _encode(m: object, ctx: object, rgb: np.ndarray, width: int) -> MtmdImage:
    mt = m  # the module, typed loosely: ctypes bindings
    h, w, _ = rgb.shape
    buf = (ctypes.c_uint8 * rgb.size).from_buffer_copy(rgb.tobytes())
    bitmap = mt.mtmd_bitmap_init(w, h, buf)  # type: ignore[attr-defined]
    chunks = mt.mtmd_input_chunks_init()  # type: ignore[attr-defined]
    try:
        text = mt.mtmd_input_text()  # type: ignore[attr-defined]
        prompt = mt.mtmd_default_marker()  # type: ignore[attr-defined]
        text.text, text.text_len = prompt, len(prompt)
        text.add_special, text.parse_special = False, True
        bitmaps = (mt.mtmd_bitmap_p_ctypes * 1)(bitmap)  # type: ignore[attr-defined]
        start = time.perf_counter()
        with _quiet():
            rc = mt.mtmd_tokenize(ctx, chunks, ctypes.byref(text), bitmaps, 1)  # type: ignore[attr-defined]
        if rc != 0:
            raise RuntimeError(f"mtmd_tokenize failed ({rc})")
        for i in range(mt.mtmd_input_chunks_size(chunks)):  # type: ignore[attr-defined]
            chunk = mt.mtmd_input_chunks_get(chunks, i)  # type: ignore[attr-defined]
            if mt.mtmd_input_chunk_get_type(chunk) != 1:  # type: ignore[attr-defined]
                continue  # MTMD_INPUT_CHUNK_TYPE_IMAGE == 1
            image = mt.mtmd_input_chunk_get_tokens_image(chunk)  # type: ignore[attr-defined]
            n = mt.mtmd_image_tokens_get_n_tokens(image)  # type: ignore[attr-defined]
            nx = mt.mtmd_image_tokens_get_nx(image)  # type: ignore[attr-defined]
            ny = mt.mtmd_image_tokens_get_ny(image)  # type: ignore[attr-defined]
            with _quiet():
                if mt.mtmd_encode_chunk(ctx, chunk) != 0:  # type: ignore[attr-defined]
                    raise RuntimeError("mtmd_encode_chunk failed")
            seconds = time.perf_counter() - start
            out = mt.mtmd_get_output_embd(ctx)  # type: ignore[attr-defined]
            flat = np.ctypeslib.as_array(out, shape=(n * width,)).copy()
            return MtmdImage(n, nx, ny, flat.reshape(n, width), seconds)
        raise RuntimeError("libmtmd made no image chunk")
    finally:
        mt.mtmd_input_chunks_free(chunks)  # type: ignore[attr-defined]
        mt.mtmd_bitmap_free(bitmap)  # type: ignore[attr-defined]


@contextlib.contextmanager
def _quiet():  # type: ignore[no-untyped-def]
    """Silence llama.cpp's C-level logging on fd 2 while it loads and encodes."""
    if os.environ.get("HEARTH_MTMD_VERBOSE"):
        yield
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
