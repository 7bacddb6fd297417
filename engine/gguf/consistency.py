"""Does a GGUF's metadata agree with its tensors? Checked once, when a file is first opened.

Owns refusing, with a message naming what disagrees, a file whose settings and weights do not
match (issue 22 A11): a vocabulary shorter or longer than the embedding's rows (a truncated
token list), scores or token types of another length, special-token ids past the vocabulary,
a ``key_length``/``value_length`` the K/V projections do not have, and a declared layer with
no tensors (transformers ran such a file with randomly initialised weights and no error).
llama.cpp refuses the same files. Does not own which tensors an architecture needs, or their
shapes (`engine.arch.tensors`, checked next), reading the file (`engine.gguf.reader`) or
building anything from it (`engine.header_cache`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine.errors import CorruptModelError

_BLOCK = re.compile(r"blk\.(\d+)\.(.+)")
_SPECIAL_ID = re.compile(r"tokenizer\.ggml\.\w+_token_id")


def check_consistency(gf: Any, path: Path) -> None:
    """Raise CorruptModelError naming the first disagreement between ``gf``'s metadata and
    its tensors (``gf``: an `engine.gguf.reader.GgufFile`)."""
    meta: dict[str, Any] = gf.metadata
    rows = _embedding_rows(gf)
    _check_vocabulary(meta, rows, path)
    _check_head_sizes(gf, meta, path)
    _check_layers(gf, meta, path)


def _embedding_rows(gf: Any) -> int | None:
    embd = gf.tensor("token_embd.weight")
    return int(embd.shape[1]) if embd is not None and len(embd.shape) >= 2 else None


def _check_vocabulary(meta: dict[str, Any], rows: int | None, path: Path) -> None:
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        return
    n = len(tokens)
    if rows is not None and n != rows:
        raise CorruptModelError(
            f"{path}: its vocabulary lists {n} tokens but token_embd.weight has {rows} rows "
            "(a truncated or padded token list)"
        )
    for key in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
        values = meta.get(key)
        if values is not None and len(values) != n:
            raise CorruptModelError(f"{path}: {key} has {len(values)} entries for {n} tokens")
    for key, value in meta.items():
        if _SPECIAL_ID.fullmatch(key) and isinstance(value, int) and not 0 <= value < n:
            raise CorruptModelError(f"{path}: {key} is {value}, past the vocabulary's {n} tokens")


def _check_head_sizes(gf: Any, meta: dict[str, Any], path: Path) -> None:
    arch = meta.get("general.architecture", "")
    heads_kv = meta.get(f"{arch}.attention.head_count_kv", meta.get(f"{arch}.attention.head_count"))
    if not isinstance(heads_kv, int) or heads_kv <= 0:
        return  # per-layer counts (an array) or none: nothing uniform to check
    for key, tensor in (("key_length", "attn_k"), ("value_length", "attn_v")):
        size = meta.get(f"{arch}.attention.{key}")
        found = gf.tensor(f"blk.0.{tensor}.weight")
        if not isinstance(size, int) or found is None or len(found.shape) < 2:
            continue
        out = int(found.shape[1])
        # Gemma 4: layer 0 is a sliding-window layer, whose heads are key_length_swa wide.
        swa = meta.get(f"{arch}.attention.{key}_swa")
        if out != size * heads_kv and not (isinstance(swa, int) and out == swa * heads_kv):
            raise CorruptModelError(
                f"{path}: {arch}.attention.{key} is {size}, but blk.0.{tensor}.weight gives "
                f"{heads_kv} KV heads {out // heads_kv if out % heads_kv == 0 else out} each"
            )


def _check_layers(gf: Any, meta: dict[str, Any], path: Path) -> None:
    """A layer the header declares with no tensor at all: refused, named (a file declaring 3
    layers but holding 2 ran with random weights). Which tensors each layer needs, and their
    shapes, is the architecture's to say (`engine.arch.tensors`), not a guess from the other
    layers: such a guess refused a valid Gemma 4 file whose global layers have no V (K = V)."""
    arch = meta.get("general.architecture", "")
    count = meta.get(f"{arch}.block_count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1 or not gf.tensors:
        return  # no tensors at all: a vocabulary-only file (llama.cpp's ggml-vocab-*.gguf)
    held = set()
    for t in gf.tensors:
        m = _BLOCK.fullmatch(t.name)
        if m:
            held.add(int(m.group(1)))
    empty = next((i for i in range(count) if i not in held), None)
    if empty is not None:
        raise CorruptModelError(
            f"{path}: layer {empty} of {count} has no tensors (a damaged or incomplete file)"
        )
