"""Tokenizers with the real special-token layouts of the tool-calling families, for tests.

Each is a vocabulary-only GGUF written with gguf-py (`bench.synth.vocab`): a small byte-level
BPE or SentencePiece body, filler tokens up to where the family's special tokens start, then
those tokens at their real ids with their real GGUF types, and a short chat template holding
the markers `engine.tools.render.tool_family` reads. The engine then reads it as it reads any
model's GGUF (`engine.gguf.tokenizer`, the header cache, `EngineTokenizer`).

- ``qwen3``: Qwen3's 151,643 + 26 (``<tool_call>`` 151657, ``<think>`` 151667), 151,936 rows.
- ``llama3``: Llama 3.1's 128,000 + 256 (``<|eot_id|>`` 128009, ``<|python_tag|>`` 128010).
- ``mistral``: Mistral-7B-Instruct-v0.3's SentencePiece head (``[TOOL_CALLS]`` 5, the
  ``[control_N]`` tokens up to 770, then the byte tokens).
- ``gpt-oss``: o200k_harmony's 199,998 + 1,090 (``<|channel|>`` 200005, ``<|call|>`` 200012).
- ``gemma3``: Gemma 3's head (``<bos>`` 2, ``<start_of_turn>`` 105, ``<end_of_turn>`` 106),
  and some of its HTML tags as plain added tokens (``<b>``, ``<code>``, ``<div>``).
- ``gemma4``: Gemma 4's call markers (``<|tool_call>``, ``<tool_call|>``, ``<|"|>``) as added
  tokens of a small SentencePiece body (their ids here are not Gemma 4's).
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.synth.vocab import (
    BYTE,
    CONTROL,
    NORMAL,
    USER_DEFINED,
    Vocab,
    small_bpe,
    spm_vocab,
    write_vocab_file,
)

QWEN3_SPECIALS = [
    *("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>"),
    *("<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>"),
    *("<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"),
    *("<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"),
    *("<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>"),
    *("<think>", "</think>"),
]
QWEN3_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>{% for t in tools %}\n"
    "{{ t | tojson }}{% endfor %}\n</tools>\nFor each function call, return a json object "
    "within <tool_call></tool_call> XML tags.<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{%- endif %}{%- endif %}"
)
LLAMA3_NAMED = {
    128000: "<|begin_of_text|>",
    128001: "<|end_of_text|>",
    128004: "<|finetune_right_pad_id|>",
    128006: "<|start_header_id|>",
    128007: "<|end_header_id|>",
    128008: "<|eom_id|>",
    128009: "<|eot_id|>",
    128010: "<|python_tag|>",
}
LLAMA3_TEMPLATE = (
    "<|begin_of_text|>{%- if tools %}<|start_header_id|>system<|end_header_id|>\n\n"
    'Respond with {"name": function name, "parameters": arguments}.'
    "{% for t in tools %}\n{{ t | tojson }}{% endfor %}<|eot_id|>{% endif %}"
    "{%- for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
    "{{ m.content }}<|eot_id|>{% endfor %}"
    "{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
MISTRAL_HEAD = [
    *("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]"),
    *("[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
    *(f"[control_{i}]" for i in range(8, 769)),
]
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]"
    "{% endif %}{%- for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]"
    "{% else %}{{ m.content }}{% endif %}{% endfor %}"
    "{#- a call is written [TOOL_CALLS][{...}] #}"
)
HARMONY_NAMED = {
    199998: "<|startoftext|>",
    199999: "<|endoftext|>",
    200002: "<|return|>",
    200003: "<|constrain|>",
    200005: "<|channel|>",
    200006: "<|start|>",
    200007: "<|end|>",
    200008: "<|message|>",
    200012: "<|call|>",
    200018: "<|endofprompt|>",
}
HARMONY_TEMPLATE = (
    "{%- for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>"
    "{% endfor %}{%- if add_generation_prompt %}<|start|>assistant{% endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{%- for m in messages %}<start_of_turn>"
    "{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content }}<end_of_turn>\n"
    "{% endfor %}{%- if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
GEMMA4_TEMPLATE = (
    "{{ bos_token }}{%- if tools %}<|turn>system\n{% for t in tools %}<|tool>"
    "{{ t | tojson }}<tool|>{% endfor %}<turn|>\n{% endif %}{%- for m in messages %}"
    "<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|turn>model\n{% endif %}{#- <|tool_call>call: #}"
)
# Gemma 3 holds HTML tags as plain added tokens (after its <unusedN> block; not at those ids).
GEMMA_HTML = ["<b>", "</b>", "<code>", "</code>", "<div>", "</div>"]
GEMMA4_ADDED = ["<|turn>", "<turn|>", "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>"]
GEMMA4_ADDED += ['<|"|>', "<|tool_response>", "<tool_response|>"]

FAMILIES = ("qwen3", "llama3", "mistral", "gpt-oss", "gemma3", "gemma4")


def _filled(vocab: Vocab, upto: int, spell: str) -> Vocab:
    """``vocab`` grown with unreachable filler tokens to ``upto`` tokens (the real size)."""
    known = set(vocab.tokens)
    n = 0
    while len(vocab.tokens) < upto:
        token = f"{spell}{n:x}"
        n += 1
        if token not in known:
            vocab.tokens.append(token)
            vocab.types.append(NORMAL)
            if vocab.scores:
                vocab.scores.append(-1e6)
    return vocab


def _bpe(first_special: int, named: dict[int, str], total: int, reserved: str) -> Vocab:
    vocab = _filled(small_bpe(6000), first_special, "Ġfill")
    for token_id in range(first_special, total):
        vocab.tokens.append(named.get(token_id, reserved.format(token_id)))
        vocab.types.append(CONTROL)
    vocab.extra = {}
    return vocab


def _qwen3() -> Vocab:
    vocab = _filled(small_bpe(6000), 151_643, "Ġfill")
    for token in QWEN3_SPECIALS:
        vocab.tokens.append(token)
        vocab.types.append(CONTROL if token.startswith("<|") else USER_DEFINED)
    vocab = _filled(vocab, 151_936, "Ġpad")  # the output layer's padding rows
    vocab.extra = {
        "tokenizer.ggml.eos_token_id": 151_645,
        "tokenizer.ggml.padding_token_id": 151_643,
        "tokenizer.ggml.bos_token_id": 151_643,
        "tokenizer.ggml.add_bos_token": False,
        "tokenizer.chat_template": QWEN3_TEMPLATE,
    }
    return vocab


def _llama3() -> Vocab:
    vocab = _bpe(128_000, LLAMA3_NAMED, 128_256, "<|reserved_special_token_{}|>")
    vocab.extra = {
        "tokenizer.ggml.bos_token_id": 128_000,
        "tokenizer.ggml.eos_token_id": 128_009,
        "tokenizer.ggml.add_bos_token": False,
        "tokenizer.chat_template": LLAMA3_TEMPLATE,
    }
    return vocab


def _harmony() -> Vocab:
    vocab = _bpe(199_998, HARMONY_NAMED, 201_088, "<|reserved_{}|>")
    vocab.extra = {
        "tokenizer.ggml.bos_token_id": 199_998,
        "tokenizer.ggml.eos_token_id": 200_002,
        "tokenizer.ggml.add_bos_token": False,
        "tokenizer.chat_template": HARMONY_TEMPLATE,
    }
    return vocab


def _spm_body(head: list[str], head_types: list[int]) -> Vocab:
    """`spm_vocab`'s bytes and pieces after ``head`` (its own <unk> <s> </s> replaced)."""
    base = spm_vocab(3000)
    body = [(t, k, s) for t, k, s in zip(base.tokens, base.types, base.scores, strict=True)]
    body = [b for b in body[3:] if b[0] not in head]
    tokens = head + [t for t, _, _ in body]
    types = head_types + [k for _, k, _ in body]
    scores = [0.0] * len(head) + [s for _, _, s in body]
    return Vocab("llama", tokens, types, scores=scores)


def _mistral() -> Vocab:
    vocab = _spm_body(MISTRAL_HEAD, [2] + [CONTROL] * (len(MISTRAL_HEAD) - 1))
    vocab.extra = {
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.chat_template": MISTRAL_TEMPLATE,
    }
    return vocab


def _gemma(version: int) -> Vocab:
    head = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[multimodal]"]
    head += [f"<unused{i}>" for i in range(99)]  # 6..104, as Gemma 3's file
    head += ["<start_of_turn>", "<end_of_turn>", *GEMMA_HTML]
    types = [CONTROL, CONTROL, CONTROL, 2, USER_DEFINED, USER_DEFINED]
    types += [USER_DEFINED] * 99 + [CONTROL, CONTROL] + [USER_DEFINED] * len(GEMMA_HTML)
    if version == 4:
        head += GEMMA4_ADDED
        types += [CONTROL] * len(GEMMA4_ADDED)
    vocab = _spm_body(head, types)
    vocab.types = [
        BYTE if t.startswith("<0x") else k for t, k in zip(vocab.tokens, vocab.types, strict=True)
    ]
    vocab.extra = {
        "tokenizer.ggml.padding_token_id": 0,
        "tokenizer.ggml.eos_token_id": 1 if version == 3 else 106,
        "tokenizer.ggml.bos_token_id": 2,
        "tokenizer.ggml.unknown_token_id": 3,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_space_prefix": False,
        "tokenizer.chat_template": GEMMA_TEMPLATE if version == 3 else GEMMA4_TEMPLATE,
    }
    return vocab


_BUILD = {
    "qwen3": (_qwen3, "qwen2", "qwen2"),
    "llama3": (_llama3, "llama", "llama-bpe"),
    "mistral": (_mistral, "llama", None),
    "gpt-oss": (_harmony, "llama", "gpt-4o"),  # the vocabulary is all that is read
    "gemma3": (lambda: _gemma(3), "gemma3", None),
    "gemma4": (lambda: _gemma(4), "gemma3", None),
}


def family_gguf(family: str, folder: Path) -> Path:
    """The vocabulary-only GGUF of ``family`` in ``folder`` (written once per folder)."""
    build, arch, pre = _BUILD[family]
    path = folder / f"{family}-vocab.gguf"
    if not path.exists():
        write_vocab_file(path, build(), arch=arch, pre=pre)
    return path


@functools.cache
def family_tokenizer(family: str) -> Any:
    """``family``'s tokenizer as the engine builds a model's from its GGUF (one per test
    session): `engine.gguf.tokenizer` over the file's metadata, loaded as `EngineTokenizer`
    (the loader's own path, without its check that the file holds layers: it holds none)."""
    from engine.gguf.reader import open_gguf
    from engine.gguf.tokenizer import tokenizer_files
    from engine.loader import _load_built_tokenizer

    folder = Path(tempfile.mkdtemp(prefix=f"hearth-vocab-{family}-"))
    body, config = tokenizer_files(open_gguf(family_gguf(family, folder)).metadata)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return _load_built_tokenizer(folder)
