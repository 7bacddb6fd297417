"""What every document extractor shares: the error, the section record, the text budget.

Owns `DocumentError` (a one-line message for the user), `Section` (a run of text and where it
is in its file), `TextBudget` (the running total of text one file yields, checked as the text
grows, so an EPUB that lists one chapter 20,000 times or a PDF whose pages share one content
stream stops at the cap instead of after gigabytes), `SectionBuilder` (text under a heading
path) and `decode_text` (bytes of a text file to str, binary refused). The extractors
(`app.documents.extract`, `formats`, `html_text`, `docx_text`) build on it. Does not own
choosing an extractor.
"""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass

MAX_TEXT_CHARS = 20_000_000  # extracted text per file, headings included (about 5M tokens)
MAX_TITLE_CHARS = 200  # one heading in a locator ("Intro › Setup"): a 1 MB heading stays short


class DocumentError(Exception):
    """A file that cannot be read as a document; ``str(e)`` is a one-line message for the user."""


def one_line(message: str, limit: int = 400) -> str:
    """``message`` on one line of at most ``limit`` characters (an exception's text can hold
    newlines, a parser's whole state or a file's content)."""
    flat = " ".join(message.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ReadCancelled(Exception):
    """Reading a file stopped because its job was cancelled (quitting, Stop): not a fault of
    the file, so it is neither skipped nor recorded."""


class TextBudget:
    """The running total of characters one file has yielded; `take` refuses past the cap.

    Every extractor charges text as it produces it (a page, a chapter's run, a CSV row), so the
    cap bounds memory and time while the file is read, not after. ``cancel``, when set, stops
    the read at the next charge (a long PDF no longer holds the app's quit)."""

    def __init__(
        self, name: str, limit: int | None = None, cancel: threading.Event | None = None
    ) -> None:
        self.name = name
        self.limit = MAX_TEXT_CHARS if limit is None else limit
        self.cancel = cancel
        self.used = 0

    def take(self, chars: int) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise ReadCancelled(self.name)
        self.used += chars
        if self.used > self.limit:
            raise DocumentError(
                f"{self.name}: over {self.limit:,} characters of text; split it first"
            )


@dataclass(frozen=True)
class Section:
    """A run of text and where it is in its file ("page 3", "Intro › Setup", "rows 1–40")."""

    text: str
    locator: str = ""
    heading: bool = False  # a Markdown/DOCX/HTML heading line: chunks start after it


class SectionBuilder:
    """Collects text under a heading path; a heading closes the running section. Every line
    and locator is charged to ``budget``."""

    def __init__(self, budget: TextBudget, prefix: str = "") -> None:
        self.budget = budget
        self.prefix = prefix
        self.path: list[str] = []
        self.lines: list[str] = []
        self.sections: list[Section] = []

    def locator(self) -> str:
        return " › ".join([p for p in [self.prefix, *self.path] if p])

    def text(self, line: str) -> None:
        self.budget.take(len(line) + 1)
        self.lines.append(line)

    def heading(self, level: int, title: str) -> None:
        self.flush()
        if not title:
            return
        del self.path[level - 1 :]
        self.path.append(title[:MAX_TITLE_CHARS])
        self.add(Section(title, self.locator(), heading=True))

    def add(self, section: Section) -> None:
        self.budget.take(len(section.text) + len(section.locator))
        self.sections.append(section)

    def flush(self) -> None:
        text = "\n".join(line.rstrip() for line in self.lines).strip()
        text = "\n".join(_collapse_blank_lines(text.split("\n")))
        if text:
            self.sections.append(Section(text, self.locator()))  # its lines were charged
            self.budget.take(len(self.sections[-1].locator))
        self.lines.clear()

    def finish(self) -> list[Section]:
        self.flush()
        return self.sections


def _collapse_blank_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line.strip() or (out and out[-1].strip()):
            out.append(line if line.strip() else "")
    return out


def decode_text(name: str, data: bytes) -> str:
    """Bytes of a text file to str: BOMs first, then UTF-8, then GB18030; binary is refused."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return _checked(name, data.decode(encoding, errors="replace"))
    if _looks_binary(data):
        raise DocumentError(f"{name}: this is binary data, not text (renamed from another type?)")
    for encoding in ("utf-8", "gb18030"):
        try:
            return _checked(name, data.decode(encoding))
        except UnicodeDecodeError:
            continue
    return _checked(name, data.decode("utf-8", errors="replace"))


def _looks_binary(data: bytes) -> bool:
    # NUL bytes never occur in UTF-8/GB18030 text; other control bytes are rare in prose.
    head = data[:65536]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return len(head) > 0 and controls / len(head) > 0.05


def _checked(name: str, text: str) -> str:
    sample = text[:65536]
    bad = sample.count("\ufffd") + sum(1 for c in sample if c < " " and c not in "\t\n\r\f")
    if sample and bad / len(sample) > 0.05:
        raise DocumentError(f"{name}: this is binary data, not text (renamed from another type?)")
    return text.replace("\r\n", "\n").replace("\x00", "")
