"""Deciding how a turn's documents reach the model: whole when they fit, else passages.

Owns the exact-fit rule and which passages go with each question:

1. Build the conversation with every attachment whole (first in its user message,
   `app.chat.attachments.with_documents`) and count it with the model's own tokenizer and chat
   template (``count``: `EngineBridge.count_tokens`). If that count plus room for the reply fits
   the context window, that is the prompt: the user sees "fits: 3,214 of 8,192 tokens".
2. Otherwise the attachments are searched per question; so are the collections the chat has
   chosen (GPT4All's LocalDocs), whether or not the attachments fit. ``retrieve`` runs the
   search: `app.documents.retrieval` (the same index and ranking as ``python -m app docs
   search``: FTS5 keyword terms, words and CJK character pairs, fused with dense vectors when
   an embedding model is configured). The best passages that fit go into the question as
   numbered sources the model is told to cite ([1], [2]).

Keeping whole documents first in the message, before the question, is deliberate: a second
question about the same document starts with the same tokens, so the engine's prefix cache
(`engine.kv_cache`) reads the document once. Qt-free. Does not own storage, widgets or the
index (`app.documents`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from app.chat.attachments import Attachment, with_documents
from app.chat.sources import Source, with_sources
from app.documents.chunking import estimate_tokens
from app.documents.extract import Document, Section, csv_sections, markdown_sections
from engine.types import Message

Count = Callable[[tuple[Message, ...]], Awaitable[int]]
# (question, attachments to search) -> passages, best first (numbered 0: not chosen yet)
Retrieve = Callable[[str, Sequence[Attachment]], Awaitable[list[Source]]]
TOP_K = 5


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


async def prepare(
    count: Count,
    turns: Sequence[Turn],
    window: int,
    retrieve: Retrieve | None = None,
    *,
    collections: bool = False,
) -> Prepared:
    """The messages to send for ``turns`` (the last is the question). With ``collections``
    (the chat searches some), passages are retrieved even when the attachments fit whole."""
    full = whole(turns)
    used = await count(full)
    fits = used + reply_reserve(window) <= window
    has_documents = any(t.attachments for t in turns)
    if retrieve is None or (fits and not collections) or not (has_documents or collections):
        return Prepared(full, (), used, window, True)
    base = full if fits else tuple(t.message for t in turns)
    question = turns[-1].message.content
    searched = [] if fits else [a for t in turns for a in t.attachments]
    ranked = await retrieve(question, searched)
    chosen: list[Source] = []
    budget = window - reply_reserve(window) - await count(base) - 80  # 80: frame, instruction
    spent = 0
    for passage in ranked[:TOP_K]:
        cost = estimate_tokens(passage.text) + 12  # an estimate; checked exactly below
        if spent + cost > budget:
            break
        chosen.append(passage.numbered(len(chosen) + 1))
        spent += cost
    messages = _ask(base, chosen)
    while chosen and await count(messages) + reply_reserve(window) > window:
        chosen.pop()
        messages = _ask(base, chosen)
    return Prepared(messages, tuple(chosen), used, window, fits)


WHOLE_SOURCE_CHARS = 4000  # of a whole document, kept with the reply for its Sources fold


def whole_sources(turns: Sequence[Turn]) -> tuple[Source, ...]:
    """The documents a reply was given whole, as its sources [1], [2]: after Sources under
    answers from collections, a whole attached file with none looked like a bug. Each keeps
    its opening text for the fold (the chat holds the whole file)."""
    seen: dict[str, Attachment] = {}
    for turn in turns:
        for attachment in turn.attachments:
            seen.setdefault(attachment.sha256, attachment)
    return tuple(
        Source(n, a.name, "", a.text[:WHOLE_SOURCE_CHARS], whole=True)
        for n, a in enumerate(seen.values(), start=1)
    )


async def continued(
    count: Count, turns: Sequence[Turn], window: int, sources: Sequence[Source]
) -> tuple[Message, ...]:
    """The messages to continue a reply (the last turn) that was given ``sources``: its
    question carries them again, with the documents whole when that still fits."""
    full = whole(turns)
    if not sources:
        return full
    at = max((i for i, t in enumerate(turns) if t.message.role == "user"), default=-1)
    if at < 0:
        return full
    plain = tuple(t.message for t in turns)
    messages = full
    for base in (full, plain):
        messages = (*base[:at], *_ask(base[: at + 1], sources)[at:], *base[at + 1 :])
        if await count(messages) + reply_reserve(window) <= window:
            break
    return messages


def _ask(plain: tuple[Message, ...], sources: Sequence[Source]) -> tuple[Message, ...]:
    last = plain[-1]
    return (*plain[:-1], replace(last, content=with_sources(last.content, sources)))


# -- the documents to search ---------------------------------------------------------------
def searchable(attachments: Sequence[Attachment]) -> list[Attachment]:
    """Each attachment once (one attached twice, or to two turns, is searched once)."""
    seen: set[str] = set()
    out = []
    for a in attachments:
        if a.sha256 not in seen:
            seen.add(a.sha256)
            out.append(a)
    return out


def attachment_document(a: Attachment) -> Document:
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
