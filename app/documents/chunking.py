"""Cutting a Document into retrieval chunks by its structure, within a token budget.

Owns the cut: sections (pages, heading paths) are never merged, so every chunk has one locator;
inside a section, paragraphs are packed greedily up to ``max_tokens``; a paragraph over the
budget is cut at sentence ends (Western ``.!?`` before a space and CJK ``。！？；``), and a sentence
still over it is cut between characters, never inside one and never between a character and
the combining mark, variation selector or joiner that belongs to it. The token counter is
passed in (the model's own, when the caller has it); the default is a character estimate.
Does not own extraction or storage.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from app.documents.extract import Document

TokenCounter = Callable[[str], int]
DEFAULT_MAX_TOKENS = 256

_PARAGRAPH = re.compile(r"\n\s*\n")
# A sentence ends after CJK end punctuation (no space needed) or after .!? and a space.
_SENTENCE_END = re.compile(r"[。！？；]+[」』”’）)\]]*\s*|[.!?]+[\"')\]]*\s+|\n")
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]")


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage: its text, where it came from, and its order in the file."""

    text: str
    locator: str
    ordinal: int


def estimate_tokens(text: str) -> int:
    """About one token per CJK character and per four other characters (BPE vocabularies)."""
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def chunk_document(
    doc: Document, max_tokens: int = DEFAULT_MAX_TOKENS, count_tokens: TokenCounter | None = None
) -> list[Chunk]:
    """The chunks of ``doc`` in reading order, each within ``max_tokens`` by ``count_tokens``."""
    if max_tokens < 8:
        raise ValueError(f"max_tokens must be at least 8, got {max_tokens}")
    count = count_tokens or estimate_tokens
    chunks: list[Chunk] = []
    for section in doc.sections:
        if section.heading:
            continue  # the heading is in the locator of what follows
        for text in chunk_text(section.text, max_tokens, count):
            chunks.append(Chunk(text, section.locator, len(chunks)))
    return chunks


def chunk_text(text: str, max_tokens: int, count: TokenCounter) -> list[str]:
    """``text`` packed into pieces of at most ``max_tokens``, cut at the largest unit that fits."""
    units: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = paragraph.strip()
        if paragraph:
            units += _fit(paragraph, max_tokens, count)
    return _pack(units, max_tokens, count)


def _fit(paragraph: str, max_tokens: int, count: TokenCounter) -> list[str]:
    if count(paragraph) <= max_tokens:
        return [paragraph]
    pieces: list[str] = []
    for sentence in split_sentences(paragraph):
        if count(sentence) <= max_tokens:
            pieces.append(sentence)
        else:
            pieces += split_characters(sentence, max_tokens, count)
    # Sentences are packed back together with their original glue (no space between CJK ones).
    return _pack(pieces, max_tokens, count, joiner="")


def split_sentences(text: str) -> list[str]:
    """Sentences with their trailing space kept, so "".join(result) == text."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if end > start:
            out.append(text[start:end])
            start = end
    if start < len(text):
        out.append(text[start:])
    return out


def split_characters(text: str, max_tokens: int, count: TokenCounter) -> list[str]:
    """Cut ``text`` between grapheme-safe positions into pieces within ``max_tokens``."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = _longest_fit(text, start, max_tokens, count)
        pieces.append(text[start:end])
        start = end
    return pieces


def _longest_fit(text: str, start: int, max_tokens: int, count: TokenCounter) -> int:
    # Grow a window until it no longer fits, then binary-search inside it: the work is linear in
    # the piece found, not in the rest of the text (a search up to len(text) made a 4 MB run of
    # words without a sentence end take 62 s, and the 20 M-character cap ~25 minutes).
    window = 8 * max_tokens + 16
    while start + window < len(text) and count(text[start : start + window]) <= max_tokens:
        window *= 2
    lo, hi = start + 1, min(len(text), start + window)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[start:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    end = lo
    while end < len(text) and end > start + 1 and not _can_cut(text, end):
        end -= 1
    if not _can_cut(text, end):  # one cluster over budget: keep it whole
        end = start + 1
        while end < len(text) and not _can_cut(text, end):
            end += 1
    return end


def _can_cut(text: str, i: int) -> bool:
    """Whether a cut before ``text[i]`` keeps every character with its marks and joiners."""
    if i <= 0 or i >= len(text):
        return True
    after, before = text[i], text[i - 1]
    if unicodedata.combining(after) or unicodedata.category(after) in {"Mn", "Me", "Mc"}:
        return False
    if after in "\u200d\ufe0f\ufe0e" or before == "\u200d":
        return False
    if "\U0001f3fb" <= after <= "\U0001f3ff":  # skin tone modifiers
        return False
    # Lone surrogates only appear in text decoded with surrogateescape; keep pairs whole.
    return not ("\ud800" <= before <= "\udbff" and "\udc00" <= after <= "\udfff")


def _pack(
    units: list[str], max_tokens: int, count: TokenCounter, joiner: str = "\n\n"
) -> list[str]:
    if count is estimate_tokens:
        return _pack_estimated(units, max_tokens, joiner)
    chunks: list[str] = []
    current = ""
    for unit in units:
        candidate = current + joiner + unit if current else unit
        if current and count(candidate) > max_tokens:
            chunks.append(current.strip())
            current = unit
        else:
            current = candidate
    if current.strip():
        chunks.append(current.strip())
    return [c for c in chunks if c]


def _pack_estimated(units: list[str], max_tokens: int, joiner: str) -> list[str]:
    """`_pack` under `estimate_tokens`, counted as it grows: the estimate of a join is exact
    from the parts' CJK and other character counts, so no chunk is counted again per unit
    (which took 18 s per million characters of short Chinese sentences)."""
    chunks: list[str] = []
    parts: list[str] = []
    cjk = chars = 0
    joiner_cjk = len(_CJK.findall(joiner))
    for unit in units:
        unit_cjk = len(_CJK.findall(unit))
        if parts:
            both_cjk = cjk + joiner_cjk + unit_cjk
            both = chars + len(joiner) + len(unit)
            if both_cjk + (both - both_cjk + 3) // 4 <= max_tokens:
                parts.append(unit)
                cjk, chars = both_cjk, both
                continue
            chunks.append(joiner.join(parts).strip())
        parts, cjk, chars = [unit], unit_cjk, len(unit)
    if parts:
        chunks.append(joiner.join(parts).strip())
    return [c for c in chunks if c]
