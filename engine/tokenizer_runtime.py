"""The engine's own tokenizer object: a `tokenizers.Tokenizer` plus its config, no transformers.

Owns `EngineTokenizer`, the tokenizer the engine hands around for a .gguf's header cache
(`engine.gguf.tokenizer` wrote its ``tokenizer.json`` and ``tokenizer_config.json``). It offers
the part of transformers' fast-tokenizer interface the engine and its callers use, with the
same results as ``transformers.TokenizersBackend`` loading those two files (tested side by side
in tests/engine/test_tokenizer_runtime.py): ``__call__``/``encode``/``decode``, id <-> token,
named special tokens and their ids, ``all_special_*``, added tokens, ``get_vocab``, ``len``,
``backend_tokenizer`` and ``apply_chat_template`` (rendered by `engine.chat_template`).
Importing transformers costs ~1.5 s and pulls in much of torch; the fast path needs neither.

As transformers does when it loads these files, named special tokens missing from the added
tokens are added (special), and the post-processor is rebuilt from ``add_bos_token`` /
``add_eos_token``.

Does not own building the files (`engine.gguf.tokenizer`), loading a Hugging Face folder's
tokenizer (transformers, in `engine.loader`), nor streaming decode (`engine.detokenizer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, processors

from engine.chat_template import pick_template, render_chat

# transformers' named special tokens, in its order (all_special_tokens follows it).
SPECIAL_NAMES: tuple[str, ...] = ("bos_token", "eos_token", "unk_token", "sep_token")
SPECIAL_NAMES += ("pad_token", "cls_token", "mask_token")
TOKENIZER_FILE, CONFIG_FILE = "tokenizer.json", "tokenizer_config.json"


class EngineTokenizer:
    """A fast tokenizer without transformers (see the module docstring)."""

    def __init__(self, backend: Tokenizer, config: Mapping[str, Any]) -> None:
        self._backend = backend
        self.special_tokens: dict[str, str] = {
            name: token
            for name in SPECIAL_NAMES
            if (token := _token_text(config.get(name))) is not None
        }
        self.chat_template: str | dict[str, str] | None = config.get("chat_template")
        self.add_bos_token = bool(config.get("add_bos_token", False))
        self.add_eos_token = bool(config.get("add_eos_token", False))
        self.clean_up_tokenization_spaces = bool(config.get("clean_up_tokenization_spaces"))
        self.model_max_length = int(config.get("model_max_length") or 1 << 60)
        self._prepare(backend)

    @classmethod
    def from_folder(cls, folder: Path) -> EngineTokenizer:
        """The tokenizer in ``folder`` (``tokenizer.json`` + ``tokenizer_config.json``)."""
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError(f"{folder / CONFIG_FILE} does not hold a JSON object")
        return cls(Tokenizer.from_file(str(folder / TOKENIZER_FILE)), config)

    # --- the backend --------------------------------------------------------------------

    @property
    def backend_tokenizer(self) -> Tokenizer:
        """The `tokenizers.Tokenizer`."""
        return self._backend

    def _prepare(self, backend: Tokenizer) -> None:
        """What transformers does on loading: named special tokens become added (special)
        tokens where they are not yet, and BOS/EOS go where the config says."""
        added = {t.content for t in backend.get_added_tokens_decoder().values()}
        missing = [t for t in dict.fromkeys(self.special_tokens.values()) if t not in added]
        if missing:
            backend.add_tokens([AddedToken(t, special=True) for t in missing])
        backend.no_truncation()
        backend.post_processor = self._post_processor(backend)

    def _post_processor(self, backend: Tokenizer) -> Any:
        bos, eos = self.special_tokens.get("bos_token"), self.special_tokens.get("eos_token")
        add_bos, add_eos = (
            self.add_bos_token and bos is not None,
            self.add_eos_token and eos is not None,
        )
        single = f"{f'{bos}:0 ' if add_bos else ''}$A:0{f' {eos}:0' if add_eos else ''}"
        pair = f"{single}{f' {bos}:1' if add_bos else ''} $B:1{f' {eos}:1' if add_eos else ''}"
        specials = [
            (t, self._id_in(backend, t)) for t, on in ((bos, add_bos), (eos, add_eos)) if on
        ]
        return processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)

    def _id_in(self, backend: Tokenizer, token: str | None) -> int | None:
        found = backend.token_to_id(token) if token is not None else None
        if found is None and token != self.special_tokens.get("unk_token"):
            return self._id_in(backend, self.special_tokens.get("unk_token"))
        return found

    # --- encoding and decoding ----------------------------------------------------------

    def __call__(
        self, text: str | Sequence[str], add_special_tokens: bool = True
    ) -> dict[str, Any]:
        """``{"input_ids": [...], "attention_mask": [...]}`` (lists of them for a list of texts).
        transformers' padding, truncation and tensor options are not offered: passing one is a
        TypeError, not a silently different result."""
        if isinstance(text, str):
            ids = self.encode(text, add_special_tokens=add_special_tokens)
            return {"input_ids": ids, "attention_mask": [1] * len(ids)}
        rows = self.backend_tokenizer.encode_batch(
            list(text), add_special_tokens=add_special_tokens
        )
        return {
            "input_ids": [r.ids for r in rows],
            "attention_mask": [r.attention_mask for r in rows],
        }

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def tokenize(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return list(
            self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).tokens
        )

    def decode(
        self,
        token_ids: int | Sequence[int] | Mapping[str, Any],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
    ) -> str:
        if isinstance(token_ids, Mapping):
            token_ids = token_ids["input_ids"]
        ids = [token_ids] if isinstance(token_ids, int) else [int(i) for i in token_ids]
        text: str = self.backend_tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
        clean = clean_up_tokenization_spaces
        if clean is None:
            clean = self.clean_up_tokenization_spaces
        if clean and type(self.backend_tokenizer.model).__name__ != "BPE":
            text = _clean_up_tokenization(text)  # transformers skips it for BPE too
        return text

    def batch_decode(self, sequences: Sequence[Sequence[int]], **options: Any) -> list[str]:
        return [self.decode(ids, **options) for ids in sequences]

    # --- vocabulary ---------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.backend_tokenizer.get_vocab_size(with_added_tokens=True))

    def __bool__(self) -> bool:
        return True

    @property
    def vocab_size(self) -> int:
        return int(self.backend_tokenizer.get_vocab_size(with_added_tokens=False))

    def get_vocab(self) -> dict[str, int]:
        """Token -> id, added tokens included (a new dict each call, as transformers builds
        it: ~50 ms and ~15 MB for 151k tokens; `token_to_id` looks one up)."""
        return dict(self.backend_tokenizer.get_vocab(with_added_tokens=True))

    @property
    def added_tokens_decoder(self) -> dict[int, AddedToken]:
        return dict(self.backend_tokenizer.get_added_tokens_decoder())

    def get_added_vocab(self) -> dict[str, int]:
        return {t.content: i for i, t in sorted(self.added_tokens_decoder.items())}

    def token_to_id(self, token: str) -> int | None:
        """``token``'s id, or None (unlike `convert_tokens_to_ids`, which falls back to unk)."""
        found = self.backend_tokenizer.token_to_id(token)
        return None if found is None else int(found)

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> Any:
        """Id of each token; a token not in the vocabulary gets the unk id (None without one)."""
        if isinstance(tokens, str):
            return self._convert_token(tokens)
        return [self._convert_token(t) for t in tokens]

    def _convert_token(self, token: str) -> int | None:
        found = self.token_to_id(token)
        return self.unk_token_id if found is None else found

    def convert_ids_to_tokens(
        self, ids: int | Sequence[int], skip_special_tokens: bool = False
    ) -> Any:
        backend = self.backend_tokenizer
        if isinstance(ids, int):
            return backend.id_to_token(ids)
        skipped = set(self.all_special_ids) if skip_special_tokens else set()
        return [backend.id_to_token(int(i)) for i in ids if int(i) not in skipped]

    # --- special tokens -----------------------------------------------------------------

    @property
    def special_tokens_map(self) -> dict[str, str]:
        return dict(self.special_tokens)

    @property
    def all_special_tokens(self) -> list[str]:
        return list(dict.fromkeys(self.special_tokens.values()))

    @property
    def all_special_ids(self) -> list[int | None]:
        return [self._convert_token(t) for t in self.all_special_tokens]

    bos_token = property(lambda self: self.special_tokens.get("bos_token"))
    eos_token = property(lambda self: self.special_tokens.get("eos_token"))
    unk_token = property(lambda self: self.special_tokens.get("unk_token"))
    pad_token = property(lambda self: self.special_tokens.get("pad_token"))
    mask_token = property(lambda self: self.special_tokens.get("mask_token"))
    sep_token = property(lambda self: self.special_tokens.get("sep_token"))
    cls_token = property(lambda self: self.special_tokens.get("cls_token"))
    bos_token_id = property(lambda self: self._named_id("bos_token"))
    eos_token_id = property(lambda self: self._named_id("eos_token"))
    pad_token_id = property(lambda self: self._named_id("pad_token"))
    mask_token_id = property(lambda self: self._named_id("mask_token"))
    sep_token_id = property(lambda self: self._named_id("sep_token"))
    cls_token_id = property(lambda self: self._named_id("cls_token"))

    @property
    def unk_token_id(self) -> int | None:
        unk = self.special_tokens.get("unk_token")
        return None if unk is None else self.token_to_id(unk)

    def _named_id(self, name: str) -> int | None:
        token = self.special_tokens.get(name)
        return None if token is None else self._convert_token(token)

    # --- chat ---------------------------------------------------------------------------

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tokenize: bool = True,
        return_dict: bool = True,
        **kwargs: Any,
    ) -> Any:
        """The conversation in the model's chat format, as transformers renders it: the text
        (``tokenize=False``), else its ids (a dict with "input_ids" when ``return_dict``).
        Extra keywords (``enable_thinking``, ...) reach the template as variables."""
        template = pick_template(self.chat_template, chat_template, tools)
        text = render_chat(
            template,
            conversation,
            tools=tools,
            documents=documents,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            variables={**self.special_tokens, **kwargs},
        )
        if not tokenize:
            return text
        encoded = self(text, add_special_tokens=False)
        return encoded if return_dict else encoded["input_ids"]

    def __repr__(self) -> str:
        return f"EngineTokenizer({len(self)} tokens, special={self.special_tokens})"


def _token_text(value: Any) -> str | None:
    """A special token as tokenizer_config.json spells it: a string, or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


_CLEAN_UPS: tuple[tuple[str, str], ...] = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
    (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip


def _clean_up_tokenization(text: str) -> str:
    """transformers' ``clean_up_tokenization``: spaces before punctuation and contractions."""
    for before, after in _CLEAN_UPS:
        text = text.replace(before, after)
    return text
