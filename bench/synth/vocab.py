"""Vocabulary-only GGUF files for tokenizer tests and the open bench, written with gguf-py.

- `bundled_vocab`: the bundled SmolLM2 file's tokens, types and merges (byte-level BPE).
- `expanded_bpe`: that vocabulary grown to a real size (~150k tokens and merges, like Qwen's):
  each new token is two existing tokens joined, and its merge is appended, so every token stays
  reachable and the BPE stays valid.
- `spm_vocab`: a SentencePiece-style vocabulary (``tokenizer.ggml.model`` "llama"): control
  tokens, the 256 byte-fallback tokens, single characters, then pieces built by joining two
  earlier pieces, scored best-first.
- `qwen_tiktoken_vocab`: Qwen's real 151,643-token BPE from a ``qwen.tiktoken`` file (some
  SDKs ship one), with merges recovered from the ranks as llama.cpp's converter does.
- `write_vocab_file`: a GGUF holding only metadata (no tensors), with just enough of the
  architecture's keys for llama.cpp's ``vocab_only`` loader.
Does not own reading them back (`engine.gguf.reader`, `engine.gguf.tokenizer`).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf

from engine.models import bundled_gguf_path as bundled_gguf

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6
TEXTS = (
    "Hello world",
    "  leading spaces and trailing  ",
    "a ,b",
    '"a ,b"',
    "中文测试，你好世界。繁體中文也要。",
    "日本語のテキストとカタカナ",
    "한국어 문장",
    "👨\u200d👩\u200d👧\u200d👦 family, ❤️\u200d🔥 heart on fire, 🏳️\u200d🌈",
    "12345 678 9.0 3,141,592 2026-12-03 0x1F",
    "def f(x):\n    if x:\n        return x  # indent\n\treturn None\n\n\n",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "it's I'M we'll THEY'VE",
    "",
    " ",
    "\n",
    "   \n\n  \t",
    "ÀÉÎõü naïve café Ωμέγα",
    "x" * 40,
    "<think>hmm</think> ok",
    "<s> </s> <unk> <bos> <eos> <pad>",
    "<|endoftext|><|begin_of_text|>",
    "▁ ▁▁ weird marks",
    "मैं हिंदी बोलता हूँ",
    "a\r\nb\rc",
    "The quick brown fox jumps over the lazy dog. " * 3,
)


@dataclass
class Vocab:
    model: str  # tokenizer.ggml.model
    tokens: list[str]
    types: list[int]
    merges: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # other tokenizer.* keys


@functools.cache
def _bundled() -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], tuple[Any, ...]]:
    reader = gguf.GGUFReader(bundled_gguf())
    fields = reader.fields
    extra = tuple(
        (k, f.contents())
        for k, f in fields.items()
        if (k.startswith("tokenizer.") and k.endswith("_id")) or k == "tokenizer.chat_template"
    )
    return (
        tuple(fields["tokenizer.ggml.tokens"].contents()),
        tuple(fields["tokenizer.ggml.token_type"].contents()),
        tuple(fields["tokenizer.ggml.merges"].contents()),
        extra,
    )


def bundled_vocab() -> Vocab:
    tokens, types, merges, extra = _bundled()
    return Vocab("gpt2", list(tokens), list(types), list(merges), extra=dict(extra))


def small_bpe(n_tokens: int) -> Vocab:
    """The bundled vocabulary cut to its first ``n_tokens`` tokens and the merges among them
    (a valid BPE: a merge is kept only when both parts and the result are kept)."""
    vocab = bundled_vocab()
    keep = set(vocab.tokens[:n_tokens])
    merges = [
        m for m in vocab.merges if m.replace(" ", "", 1) in keep and set(m.split(" ", 1)) <= keep
    ]
    return Vocab("gpt2", vocab.tokens[:n_tokens], vocab.types[:n_tokens], merges, extra=vocab.extra)


def expanded_bpe(n_tokens: int, seed: int = 0, base: Vocab | None = None) -> Vocab:
    """``base`` (the bundled vocabulary) grown to ``n_tokens`` by joining pairs of tokens."""
    vocab = base or bundled_vocab()
    rng = random.Random(seed)
    known = set(vocab.tokens)
    # join pieces that are not special, so the new tokens read like text
    pool = [t for t, k in zip(vocab.tokens, vocab.types, strict=True) if k == NORMAL]
    while len(vocab.tokens) < n_tokens:
        left, right = rng.choice(pool), rng.choice(pool)
        joined = left + right
        if joined in known or len(joined) > 16:
            continue
        known.add(joined)
        vocab.tokens.append(joined)
        vocab.types.append(NORMAL)
        vocab.merges.append(f"{left} {right}")
        pool.append(joined)
    return vocab


def with_specials(vocab: Vocab, control: list[str], user: list[str]) -> Vocab:
    """``vocab`` with extra CONTROL and USER_DEFINED tokens appended (as Qwen's end)."""
    for tokens, kind in ((control, CONTROL), (user, USER_DEFINED)):
        for token in tokens:
            if token not in vocab.tokens:
                vocab.tokens.append(token)
                vocab.types.append(kind)
    return vocab


def spm_vocab(n_tokens: int, seed: int = 0) -> Vocab:
    """A SentencePiece BPE vocabulary with scores, byte fallback and special tokens."""
    rng = random.Random(seed)
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, CONTROL, CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    chars = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:'\"!?()-_")
    chars += [*"中文测试你好世界日本語のテキスト", "▁", "\t", "\n", "é", "ü"]
    pieces = list(dict.fromkeys(chars))
    tokens += pieces
    types += [NORMAL] * len(pieces)
    known = set(tokens)
    words = ["▁the", "▁a", "▁hello", "▁world", "ing", "er", "▁in", "▁of", "▁中文", "▁▁", "▁▁▁▁"]
    grown = [w for w in words if w not in known]
    for word in grown:  # make each word reachable by adding its prefixes
        for k in range(2, len(word) + 1):
            if word[:k] not in known:
                known.add(word[:k])
                tokens.append(word[:k])
                types.append(NORMAL)
    pool = tokens[259:]
    while len(tokens) < n_tokens - 2:
        joined = rng.choice(pool) + rng.choice(pool)
        if joined in known or len(joined) > 12:
            continue
        known.add(joined)
        tokens.append(joined)
        types.append(NORMAL)
        pool.append(joined)
    tokens += ["<start_of_turn>", "<tool>"]
    types += [CONTROL, USER_DEFINED]
    scores = [0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)]
    extra = {
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
    }
    return Vocab("llama", tokens, types, scores=scores, extra=extra)


def write_vocab_file(
    path: Path, vocab: Vocab, *, arch: str = "llama", pre: str | None = None
) -> Path:
    """A metadata-only GGUF of ``vocab`` under ``arch`` (``pre``: tokenizer.ggml.pre)."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"vocab test ({arch}, {vocab.model}, {pre})")
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    add_vocab(w, vocab, pre)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def add_vocab(w: gguf.GGUFWriter, vocab: Vocab, pre: str | None = None) -> None:
    """Write ``vocab``'s ``tokenizer.*`` keys (``pre``: tokenizer.ggml.pre) to ``w``."""
    w.add_tokenizer_model(vocab.model)
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.types)
    if vocab.scores:
        w.add_token_scores(vocab.scores)
    if vocab.merges:
        w.add_token_merges(vocab.merges)
    for key, value in vocab.extra.items():
        if key == "tokenizer.chat_template":
            w.add_chat_template(value)
        elif isinstance(value, bool):
            w.add_bool(key, value)
        else:
            w.add_uint32(key, int(value))


def gemma_vocab(n_tokens: int, seed: int = 0) -> Vocab:
    """`spm_vocab` laid out as Gemma's: <pad> <eos> <bos> <unk> <mask> first, and tokens of
    spaces spelled with real spaces (as Gemma GGUFs store them)."""
    base = spm_vocab(n_tokens, seed)
    head = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    body = [
        (t, k)
        for t, k in zip(base.tokens, base.types, strict=True)
        if k != CONTROL and not (len(t) > 1 and set(t) == {"▁"})  # Gemma spells those "  "
    ][1:]
    body += [("  ", NORMAL), ("   ", NORMAL), ("\n\n", NORMAL)]
    body += [("<start_of_turn>", CONTROL), ("<end_of_turn>", CONTROL)]
    tokens = head + [t for t, _ in body]
    types = [CONTROL, CONTROL, CONTROL, 2, USER_DEFINED] + [k for _, k in body]
    extra = {
        "tokenizer.ggml.padding_token_id": 0,
        "tokenizer.ggml.eos_token_id": 1,
        "tokenizer.ggml.bos_token_id": 2,
        "tokenizer.ggml.unknown_token_id": 3,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_space_prefix": False,  # as Gemma files say
    }
    scores = [0.0] * len(tokens)
    return Vocab("llama", tokens, types, scores=scores, extra=extra)


QWEN25_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def qwen_tiktoken_vocab(path: Path) -> Vocab:
    """Qwen2.5's vocabulary from ``qwen.tiktoken`` (base64 token, rank per line): 151,643
    byte-level tokens, 151,387 merges recovered from the ranks, then its 22 special tokens."""
    import base64

    ranks: dict[bytes, int] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        if line:
            encoded, rank = line.split()
            ranks[base64.b64decode(encoded)] = int(rank)
    by_rank = sorted(ranks, key=ranks.__getitem__)
    spell = _byte_spelling()
    tokens = ["".join(spell[b] for b in t) for t in by_rank]
    merges = []
    for raw in by_rank:
        if len(raw) > 1:
            left, right = _last_merge(ranks, raw)
            merges.append("".join(spell[b] for b in left) + " " + "".join(spell[b] for b in right))
    types = [NORMAL] * len(tokens)
    for special in QWEN25_SPECIALS:
        tokens.append(special)
        types.append(USER_DEFINED if special.startswith("<tool") else CONTROL)
    first = len(by_rank)
    extra: dict[str, Any] = {
        "tokenizer.ggml.eos_token_id": first + 2,
        "tokenizer.ggml.padding_token_id": first,
        "tokenizer.ggml.bos_token_id": first,
        "tokenizer.ggml.add_bos_token": False,
        "tokenizer.chat_template": CHATML_TEMPLATE,
    }
    return Vocab("gpt2", tokens, types, merges, extra=extra)


def _last_merge(ranks: dict[bytes, int], token: bytes) -> tuple[bytes, bytes]:
    """The two parts byte-level BPE joins last to make ``token`` (merging by rank, below the
    token's own)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    limit = ranks[token]
    while len(parts) > 2:
        best, at = limit, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1], limit)
            if rank < best:
                best, at = rank, i
        if at < 0:
            break
        parts[at : at + 2] = [parts[at] + parts[at + 1]]
    if len(parts) != 2:
        raise ValueError(f"no merge makes the token {token!r}")
    return parts[0], parts[1]


def _byte_spelling() -> dict[int, str]:
    from engine.gguf.tokenizer import _byte_spelling as spelling

    return spelling()
