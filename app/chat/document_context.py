"""Deciding how a turn's attached documents reach the model: whole when they fit, else passages.

Owns the exact-fit rule and per-question retrieval over a chat's attachments:

1. Build the conversation with every attachment whole (first in its user message,
   `app.chat.attachments.with_documents`) and count it with the model's own tokenizer and chat
   template (``count``: `EngineBridge.count_tokens`). If that count plus room for the reply fits
   the context window, that is the prompt: the user sees "fits: 3,214 of 8,192 tokens".
2. Otherwise the documents are split into passages by `app.documents`' chunker (structure,
   never inside a character), ranked against the question (BM25 over its keyword terms: words
   and CJK character pairs, so Chinese matches without a word segmenter), and the best that fit
   go into the question as numbered sources the model is told to cite ([1], [2]).

Keeping whole documents first in the message, before the question, is deliberate: a second
question about the same document starts with the same tokens, so the engine's prefix cache
(`engine.kv_cache`) reads the document once. Qt-free. Does not own storage, widgets or the
collections index (`app.documents`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from app.chat.attachments import Attachment, with_documents
from app.chat.sources import Source, with_sources
from app.documents.chunking import chunk_document, estimate_tokens
from app.documents.extract import Document, Section, csv_sections, markdown_sections
from app.documents.ranking import terms
from engine.types import Message

Count = Callable[[tuple[Message, ...]], Awaitable[int]]
PASSAGE_TOKENS = 200  # by the chunker's estimate (about 4 Latin characters or 1 CJK a token)
TOP_K = 5
CONTEXT_CHARS = 600  # shown around a passage in its "in context" dialog


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the shown branch, with the documents attached to it."""

    message: Message
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True, slots=True)
class Prepared:
    messages: tuple[Message, ...]
    sources: tuple[Source, ...]  # empty when the documents went in whole
    used: int  # tokens of the conversation with the documents whole
    window: int
    fits: bool


def reply_reserve(window: int) -> int:
    """Room kept for the answer when judging a fit."""
    return min(1024, max(64, window // 8))


async def fit_count(count: Count, turns: Sequence[Turn]) -> int:
    """Exact tokens of ``turns`` with every document whole (what the composer shows)."""
    return await count(whole(turns))


def whole(turns: Sequence[Turn]) -> tuple[Message, ...]:
    # replace(): a turn keeps everything else it carries (tool calls, a tool's answer).
    return tuple(
        replace(t.message, content=with_documents(t.message.content, t.attachments)) for t in turns
    )


async def prepare(count: Count, turns: Sequence[Turn], window: int) -> Prepared:
    """The messages to send for ``turns`` (the last is the question)."""
    full = whole(turns)
    used = await count(full)
    if not any(t.attachments for t in turns) or used + reply_reserve(window) <= window:
        return Prepared(full, (), used, window, True)
    plain = tuple(t.message for t in turns)
    question = plain[-1].content
    ranked = rank(passages([a for t in turns for a in t.attachments]), question)
    chosen: list[Source] = []
    base = await count(plain)
    budget = window - reply_reserve(window) - base - 80  # 80: the block's frame and instruction
    spent = 0
    for passage in ranked[:TOP_K]:
        cost = estimate_tokens(passage.text) + 12  # an estimate; checked exactly below
        if spent + cost > budget:
            break
        chosen.append(_numbered(passage, len(chosen) + 1))
        spent += cost
    messages = _ask(plain, chosen)
    while chosen and await count(messages) + reply_reserve(window) > window:
        chosen.pop()
        messages = _ask(plain, chosen)
    return Prepared(messages, tuple(chosen), used, window, False)


def _ask(plain: tuple[Message, ...], sources: Sequence[Source]) -> tuple[Message, ...]:
    last = plain[-1]
    return (*plain[:-1], replace(last, content=with_sources(last.content, sources)))


def _numbered(s: Source, n: int) -> Source:
    return Source(n, s.file, s.locator, s.text, s.before, s.after)


# -- passages -----------------------------------------------------------------------------------
def passages(attachments: Sequence[Attachment]) -> list[Source]:
    """Every attachment split into passages (number 0: not chosen yet), by `app.documents`'
    chunker: by structure (Markdown heading paths, CSV rows, paragraphs), Chinese at 。！？；,
    never inside a character or a grapheme. Each keeps the text around it for its dialog."""
    out: list[Source] = []
    seen: set[str] = set()
    for a in attachments:
        if a.sha256 in seen:  # attached twice: its passages once
            continue
        seen.add(a.sha256)
        cursor = 0
        for chunk in chunk_document(_document(a), PASSAGE_TOKENS):
            start, end = _span(a.text, chunk.text, cursor)
            cursor = max(cursor, end)
            before = a.text[max(0, start - CONTEXT_CHARS) : start] if end else ""
            after = a.text[end : end + CONTEXT_CHARS] if end else ""
            out.append(Source(0, a.name, chunk.locator, chunk.text, before, after))
    return out


def _document(a: Attachment) -> Document:
    """The attachment's structure again: Markdown headings and CSV rows from its text, the
    pages or headings of a PDF, DOCX, HTML or EPUB from the places saved with it."""
    name = a.name.lower()
    if a.kind == "markdown" or name.endswith((".md", ".markdown")):
        sections = markdown_sections(a.text)
    elif a.kind == "csv" or name.endswith((".csv", ".tsv")):
        sections = csv_sections(a.text, "\t" if name.endswith(".tsv") else ",")
    elif a.sections:
        ends = [o for o, _ in a.sections[1:]] + [len(a.text)]
        sections = [Section(a.text[: a.sections[0][0]])] if a.sections[0][0] > 0 else []
        sections += [
            Section(a.text[o:end].strip("\n"), loc)
            for (o, loc), end in zip(a.sections, ends, strict=True)
        ]
    else:
        sections = [Section(a.text)]
    return Document(a.name, a.kind, tuple(sections))


def _span(text: str, passage: str, cursor: int) -> tuple[int, int]:
    """Where ``passage`` lies in ``text`` (found by its first and last words, since the chunker
    normalises the blank lines between paragraphs); (0, 0) when it cannot be found."""
    head, tail = passage[:40], passage[-40:]
    start = text.find(head, cursor)
    if start < 0:
        start = text.find(head)
    if start < 0:
        return 0, 0
    end = text.find(tail, start + max(0, len(passage) - len(tail) - 200))
    return (start, end + len(tail)) if end >= 0 else (start, start + len(passage))


def rank(candidates: Sequence[Source], question: str) -> list[Source]:
    """``candidates`` ordered by BM25 against ``question`` (ties keep document order)."""
    if not candidates:
        return []
    docs = [Counter(terms(c.text)) for c in candidates]
    avg = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    query = set(terms(question))
    n = len(docs)

    def score(d: Counter[str]) -> float:
        length = sum(d.values())
        total = 0.0
        for t in query:
            if t in d:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                tf = d[t]
                total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        return total

    order = sorted(range(n), key=lambda i: -score(docs[i]))
    return [candidates[i] for i in order]
