"""A GGUF's tokenizer, built from its metadata: `tokenizer.json` + `tokenizer_config.json`.

Owns `tokenizer_files`: from the values `engine.gguf.reader` read (one pass over the file),
the JSON for the `tokenizers` library and the transformers tokenizer config (chat template,
bos/eos/unk/pad, whether to add BOS/EOS) that `transformers.PreTrainedTokenizerFast` loads
from the header cache. Two vocabulary models, as llama.cpp names them in
``tokenizer.ggml.model``:

- ``gpt2``: byte-level BPE with the file's merges; the text is split first by the regexes
  llama.cpp uses for the file's ``tokenizer.ggml.pre`` (`PRE_SPLITS`: llama3, qwen2, qwen35,
  gpt-4o, smollm-style, deepseek-v3, tekken; anything else: GPT-2's own split).
- ``llama`` / ``gemma4``: SentencePiece BPE with byte fallback. Files carry scores, not merges,
  so the merges are rebuilt from the vocabulary: every way to cut a token into two tokens,
  ranked by the merged token's score (Gemma: by its position, which is its merge order).
  Gemma files spell tokens of spaces with real spaces; they are re-spelled with "▁". The
  dummy prefix space is added as llama.cpp adds it, also where the text starts with a space
  (transformers' conversion differs there, except for Phi-3).

Tokens marked CONTROL become special added tokens and USER_DEFINED ones plain added tokens, so
they are matched whole in text, as llama.cpp does. The result tokenizes as transformers' own
GGUF conversion does, which this replaces on the open path because it parsed the metadata again
per call, and as llama.cpp does where the two differ (SentencePiece text starting with a space
or following a special token; smollm-style digit splitting; llama3-style "ignore_merges" and
default BOS): tests/engine/test_gguf_tokenizer.py. Does not own reading the file
(`engine.gguf.reader`), the header cache (`engine.header_cache`) or decoding streams
(`engine.detokenizer`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from engine.errors import UnsupportedModelError

CONTROL, USER_DEFINED = 3, 4  # llama.cpp token types
_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_LLAMA3 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN35 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_UPPER, _LOWER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_GPT4O = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_CONTRACTIONS}?"
    rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_CONTRACTIONS}?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_DEEPSEEK_V3 = (
    r"\p{N}{1,3}",
    r"[一-龥぀-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
GPT2_SPLIT = None  # marker: GPT-2's own regex, applied by the ByteLevel pre-tokenizer
# tokenizer.ggml.pre -> the regexes llama.cpp applies in turn (GPT2_SPLIT last: GPT-2's own).
PRE_SPLITS: dict[str, tuple[str | None, ...]] = {
    **dict.fromkeys(
        ("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "dbrx"),
        (_LLAMA3,),
    ),
    **dict.fromkeys(("smaug-bpe", "lfm2", "midm-2.0", "chatglm-bpe"), (_LLAMA3,)),
    **dict.fromkeys(
        ("qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez", "kormo"), (_QWEN2,)
    ),
    "qwen35": (_QWEN35,),
    **dict.fromkeys(("gpt-4o", "llama4", "minimax-m2", "kanana2"), (_GPT4O,)),
    "tekken": (_TEKKEN,),
    **dict.fromkeys(("deepseek-v3", "hunyuan-dense"), _DEEPSEEK_V3),
}
# llama.cpp: these vocabularies take a pre-token that is itself a token whole, skipping the
# merges (as their tokenizer.json's "ignore_merges" says), and add BOS unless the file says not.
_LLAMA3_FAMILY = (
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
    "tekken",
)
_SPM_MODELS = ("llama", "gemma4")
Tick = Callable[[float], None]


def _no_tick(_fraction: float) -> None:
    return None


def tokenizer_files(
    meta: dict[str, Any], tick: Tick = _no_tick
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tokenizer.json, tokenizer_config.json) as dicts, from a GGUF's metadata values.
    ``tick(fraction)`` reports progress within the build, at least every ~0.1 s of work.
    UnsupportedModelError when the file holds a vocabulary model this does not build."""
    model = str(meta.get("tokenizer.ggml.model") or "")
    tokens: list[str] = list(meta.get("tokenizer.ggml.tokens") or [])
    if not tokens:
        raise UnsupportedModelError("the GGUF file carries no vocabulary (tokenizer.ggml.tokens)")
    types = _as_list(meta.get("tokenizer.ggml.token_type"))
    arch = str(meta.get("general.architecture") or "")
    if model == "gpt2":
        body = _byte_level(tokens, meta, tick)
        vocab = body["model"]["vocab"]
        spelled = _byte_alphabet()
        added = _added(tokens, types, lambda t: set(t) <= spelled, lambda t: t in vocab)
    elif model in _SPM_MODELS:
        body = _sentencepiece(tokens, meta, arch, model, tick)
        vocab = body["model"]["vocab"]
        added = _added(tokens, types, lambda t: True, lambda t: t in vocab)
    else:
        raise UnsupportedModelError(
            f"the GGUF file's tokenizer model {model!r} is not supported "
            f"(supported: gpt2, {', '.join(_SPM_MODELS)})"
        )
    config = _config(tokens, meta, model)
    body["post_processor"] = _post_processor(tokens, meta, config)
    body = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, **body}
    return body, config


def _byte_level(tokens: list[str], meta: dict[str, Any], tick: Tick) -> dict[str, Any]:
    spelling = _byte_spelling()
    alphabet = _byte_alphabet()
    vocab: dict[str, int] = {}
    for i, t in enumerate(tokens):  # a token outside the byte alphabet is re-spelled in it
        vocab[t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8"))] = i
    tick(0.4)
    merges = [m.split(" ", 1) for m in meta.get("tokenizer.ggml.merges") or []]
    tick(0.8)
    splits = PRE_SPLITS.get(str(meta.get("tokenizer.ggml.pre") or ""), (GPT2_SPLIT,))
    if meta.get("tokenizer.ggml.pre") in ("smollm", "starcoder", "refact", "codeshell"):
        splits = (r"\p{N}", GPT2_SPLIT)  # llama.cpp: each digit alone, then GPT-2's split
    return {
        "normalizer": None,
        "pre_tokenizer": _pre_tokenizer(splits),
        "post_processor": None,  # `_post_processor`
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            **_bpe(vocab, merges, byte_fallback=False, unk=None),
            "ignore_merges": meta.get("tokenizer.ggml.pre") in _LLAMA3_FAMILY,
        },
    }


def _pre_tokenizer(splits: Sequence[str | None]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
        for r in splits
        if r is not None
    ]
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": splits[-1] is GPT2_SPLIT,
    }
    if not steps:
        return byte_level
    return {"type": "Sequence", "pretokenizers": [*steps, byte_level]}


def _sentencepiece(
    tokens: list[str], meta: dict[str, Any], arch: str, model: str, tick: Tick
) -> dict[str, Any]:
    old_gemma = model == "llama" and arch in ("gemma", "gemma2", "gemma3")
    gemma = old_gemma or model == "gemma4"
    if old_gemma:  # spaces spelled as spaces; merge order = position
        tokens = ["▁" * len(t) if " " in t and not t.strip() else t for t in tokens]
        scores: Sequence[float] = [-float(i) for i in range(len(tokens))]
    else:
        scores = _as_list(meta.get("tokenizer.ggml.scores")) or [0.0] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    file_merges = meta.get("tokenizer.ggml.merges")
    if file_merges:
        merges = [m.split(" ", 1) for m in file_merges]
    else:
        merges = spm_merges(tokens, scores, vocab, tick)
    strip = [{"type": "Strip", "content": " ", "start": 1, "stop": 0}]
    decoder = [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if gemma:
        unk_id = meta.get("tokenizer.ggml.unknown_token_id")
        return {
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            "pre_tokenizer": {
                "type": "Split",
                "pattern": {"String": " "},
                "behavior": "MergedWithPrevious",
                "invert": False,
            },
            "post_processor": None,
            "decoder": {"type": "Sequence", "decoders": decoder},
            "model": _bpe(vocab, merges, byte_fallback=True, unk=_token(tokens, unk_id, "<unk>")),
        }
    # SentencePiece's dummy prefix, as llama.cpp adds it: before the text and after every
    # special token, even where the text already starts with a space ("  hi" -> "▁▁▁hi").
    # (transformers' Metaspace skips it there, except for Phi-3; llama.cpp is the reference.)
    steps: list[dict[str, Any]] = [{"type": "Prepend", "prepend": "▁"}]
    if meta.get("tokenizer.ggml.add_space_prefix") is False:
        steps, strip = [], []
    steps.append({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})
    normalizer = {"type": "Sequence", "normalizers": steps}
    pre = None
    return {
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoder + strip},
        "model": _bpe(vocab, merges, byte_fallback=True, unk=None),
    }


def spm_merges(
    tokens: Sequence[str], scores: Sequence[float], vocab: dict[str, int], tick: Tick = _no_tick
) -> list[list[str]]:
    """The merges a score-ranked SentencePiece vocabulary implies: each (left, right) pair of
    tokens that spells another token, best merged token first; ties by the pieces' lengths
    (longer first), then in vocabulary order."""
    ranked: dict[str, float] = dict(
        zip(tokens, scores, strict=False)
    )  # a repeated token: its last score
    found: list[tuple[float, int, int, int, str, str]] = []
    order = 0
    for n, (merged, score) in enumerate(ranked.items()):
        if n % 16384 == 0:
            tick(0.9 * n / len(ranked))
        pairs = [
            (vocab[merged[:k]], vocab[merged[k:]], merged[:k], merged[k:])
            for k in range(1, len(merged))
            if merged[:k] in vocab and merged[k:] in vocab
        ]
        for _, _, left, right in sorted(pairs):
            # sort key: best score, longer left, longer right, then first found
            found.append((-score, -len(left), -len(right), order, left, right))
            order += 1
    found.sort()
    return [[left, right] for *_, left, right in found]


def _bpe(
    vocab: dict[str, int], merges: list[list[str]], *, byte_fallback: bool, unk: str | None
) -> dict[str, Any]:
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": unk,
        "continuing_subword_prefix": "" if not byte_fallback else None,
        "end_of_word_suffix": "" if not byte_fallback else None,
        "fuse_unk": byte_fallback,
        "byte_fallback": byte_fallback,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": merges,
    }


def _added(
    tokens: list[str], types: Sequence[Any], special_ok: Any, plain_ok: Any
) -> list[dict[str, Any]]:
    """Added tokens: CONTROL ones special, USER_DEFINED ones plain (both matched whole)."""
    out = []
    for i, (token, kind) in enumerate(zip(tokens, types, strict=False)):
        if (kind == CONTROL and special_ok(token)) or (kind == USER_DEFINED and plain_ok(token)):
            out.append(
                {
                    "id": i,
                    "content": token,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": kind == CONTROL,
                }
            )
    return out


def _post_processor(
    tokens: list[str], meta: dict[str, Any], config: dict[str, Any]
) -> dict[str, Any]:
    """BOS before and EOS after each sequence, where the file asks for them."""
    ends: dict[str, list[tuple[str, int]]] = {"bos": [], "eos": []}
    for end in ends:
        index = meta.get(f"tokenizer.ggml.{end}_token_id")
        if config[f"add_{end}_token"] and isinstance(index, int) and 0 <= index < len(tokens):
            ends[end].append((tokens[index], index))

    def seq(part: str, type_id: int) -> list[dict[str, Any]]:
        def special(pairs: list[tuple[str, int]]) -> list[dict[str, Any]]:
            return [{"SpecialToken": {"id": t, "type_id": type_id}} for t, _ in pairs]

        body = [{"Sequence": {"id": part, "type_id": type_id}}]
        return special(ends["bos"]) + body + special(ends["eos"])

    specials = {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in ends["bos"] + ends["eos"]}
    return {
        "type": "TemplateProcessing",
        "single": seq("A", 0),
        "pair": seq("A", 0) + seq("B", 1),
        "special_tokens": specials,
    }


def _config(tokens: list[str], meta: dict[str, Any], model: str) -> dict[str, Any]:
    add_bos = meta.get("tokenizer.ggml.add_bos_token")
    if add_bos is None and (model == "llama" or meta.get("tokenizer.ggml.pre") in _LLAMA3_FAMILY):
        add_bos = True  # llama.cpp's default for these vocabularies, when the file does not say
    if model == "gemma4":
        add_bos = False  # its chat template writes <bos> itself
    config: dict[str, Any] = {
        "tokenizer_class": "TokenizersBackend",  # use tokenizer.json as written
        "add_bos_token": bool(add_bos),
        "add_eos_token": bool(meta.get("tokenizer.ggml.add_eos_token") or False),
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1 << 60,
    }
    for name, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding")):
        config[f"{name}_token"] = _token(tokens, meta.get(f"tokenizer.ggml.{key}_token_id"), None)
    gemma = model == "gemma4" or str(meta.get("general.architecture", "")).startswith("gemma")
    if gemma and "<mask>" in tokens:  # Gemma's tokenizer counts it special whatever the file says
        config["mask_token"] = "<mask>"
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str):
        config["chat_template"] = template
    return config


def _token(tokens: list[str], index: Any, default: str | None) -> str | None:
    if isinstance(index, int) and 0 <= index < len(tokens):
        return tokens[index]
    return default


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value.tolist() if hasattr(value, "tolist") else list(value)


@cache
def _byte_spelling() -> dict[int, str]:
    """GPT-2's printable spelling of each byte (the byte-level BPE alphabet)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    return {b: chr(b) if b in printable else chr(next(extra)) for b in range(256)}


@cache
def _byte_alphabet() -> frozenset[str]:
    return frozenset(_byte_spelling().values())
