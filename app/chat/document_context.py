"""Deciding how a turn's attached documents reach the model: whole when they fit, else passages.

Owns the exact-fit rule and per-question retrieval over a chat's attachments:

1. Build the conversation with every attachment whole (first in its user message,
   `app.chat.attachments.with_documents`) and count it with the model's own tokenizer and chat
   template (``count``: `EngineBridge.count_tokens`). If that count plus room for the reply fits
   the context window, that is the prompt: the user sees "fits: 3,214 of 8,192 tokens".
2. Otherwise the documents are split into passages by structure (Markdown headings, blank-line
   paragraphs, never inside a character), ranked against the question (BM25 over words and CJK
   character pairs, so Chinese matches without a word segmenter), and the best that fit go into
   the question as numbered sources the model is told to cite ([1], [2]).

Keeping whole documents first in the message, before the question, is deliberate: a second
question about the same document starts with the same tokens, so the engine's prefix cache
(`engine.kv_cache`) reads the document once. Qt-free. Does not own storage, widgets or the
collections index (`app.documents`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from app.chat.attachments import Attachment, with_documents
from app.chat.sources import Source, with_sources
from engine.types import Message

Count = Callable[[tuple[Message, ...]], Awaitable[int]]
PASSAGE_CHARS = 900  # about 200-250 tokens of English; fewer characters of Chinese per token
TOP_K = 5
CONTEXT_CHARS = 600  # shown around a passage in its "in context" dialog
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_WORD = re.compile(r"[0-9a-z]+|[\u3400-\u9fff\uf900-\ufaff]+")


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
    return tuple(
        Message(t.message.role, with_documents(t.message.content, t.attachments),
                t.message.reasoning)
        for t in turns
    )  # fmt: skip


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
        cost = len(passage.text) // 3 + 12  # a cheap upper estimate; checked exactly below
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
    return (*plain[:-1], Message(last.role, with_sources(last.content, sources), last.reasoning))


def _numbered(s: Source, n: int) -> Source:
    return Source(n, s.file, s.locator, s.text, s.before, s.after)


# -- passages -----------------------------------------------------------------------------------
def passages(attachments: Sequence[Attachment]) -> list[Source]:
    """Every attachment split into passages (number 0: not chosen yet)."""
    out: list[Source] = []
    seen: set[str] = set()
    for a in attachments:
        if a.sha256 in seen:  # attached twice: its passages once
            continue
        seen.add(a.sha256)
        for start, end, heading in _spans(a.text):
            text = a.text[start:end].strip()
            if text:
                before = a.text[max(0, start - CONTEXT_CHARS) : start]
                after = a.text[end : end + CONTEXT_CHARS]
                out.append(Source(0, a.name, heading, text, before, after))
    return out


def _spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, heading) of passages: paragraphs merged up to `PASSAGE_CHARS`, a heading
    always starting a new one, an over-long paragraph cut at a line or sentence end."""
    spans: list[tuple[int, int, str]] = []
    heading, start, pos = "", 0, 0
    for para in re.split(r"(\n\s*\n)", text):
        end = pos + len(para)
        first_line = para.strip().split("\n", 1)[0]
        m = _HEADING.match(first_line)
        if m and pos > start:
            spans.append((start, pos, heading))
            start = pos
        if m:
            heading = m.group(2)
        if end - start > PASSAGE_CHARS and pos > start:
            spans.append((start, pos, heading))
            start = pos
        pos = end
        while pos - start > 2 * PASSAGE_CHARS:  # one huge paragraph: cut it
            cut = _cut(text, start, start + PASSAGE_CHARS)
            spans.append((start, cut, heading))
            start = cut
    if pos > start:
        spans.append((start, pos, heading))
    return spans


def _cut(text: str, start: int, limit: int) -> int:
    for sep in ("\n", "。", ". ", "；", "; ", "，", ", ", " "):
        at = text.rfind(sep, start + PASSAGE_CHARS // 2, limit)
        if at > 0:
            return at + len(sep)
    return limit  # str slicing never splits a character


def terms(text: str) -> list[str]:
    """Lower-case words, and Chinese as overlapping character pairs (single characters too)."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w[0] >= "\u3400":
            out.extend(w)
            out.extend(w[i : i + 2] for i in range(len(w) - 1))
        else:
            out.append(w)
    return out


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
