"""Turning a file into text sections, safely.

Owns the dispatch by file type, the guards every file goes through first (only a regular
file is opened, without blocking, and checked before a byte is read: a FIFO or a link to
/dev/zero named like a document used to hang the indexer; a size cap; binary garbage under a
text name; text encoding detection) and the plain-text formats (text, Markdown, source code,
CSV). The structured formats live in `app.documents.formats` (PDF, EPUB), `html_text` and
`docx_text`. Every extractor charges its text to one `TextBudget` as the text grows. Every
failure is a `DocumentError` whose message is one line naming the file and what to do; a parser
that breaks on a hostile file in a way nobody foresaw is one too, so one file never stops the
others. Does not own chunking, storage or retrieval.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from app.documents import formats  # the structured formats import their libraries lazily
from app.documents.docx_text import docx_sections
from app.documents.html_text import html_sections
from app.documents.sections import (  # DocumentError and Section are re-exported from here
    MAX_TITLE_CHARS,
    DocumentError,
    ReadCancelled,
    Section,
    TextBudget,
    decode_text,
    one_line,
)

MAX_FILE_BYTES = 200 * 1024 * 1024  # larger files are refused before reading a byte
CSV_ROWS_PER_SECTION = 40
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows

TEXT_SUFFIXES = frozenset(
    {".txt", ".text", ".md", ".markdown", ".rst", ".log", ".ini", ".cfg", ".toml", ".yaml"}
    | {".yml", ".json", ".xml", ".tex", ".org", ".adoc"}
)
CODE_SUFFIXES = frozenset(
    {".py", ".pyi", ".js", ".ts", ".tsx", ".jsx", ".java", ".kt", ".c", ".h", ".cc", ".cpp"}
    | {".hpp", ".cs", ".go", ".rs", ".rb", ".php", ".swift", ".m", ".scala", ".sh", ".bash"}
    | {".ps1", ".sql", ".lua", ".r", ".pl", ".dart", ".vue", ".css", ".scss", ".zig"}
)
STRUCTURED_SUFFIXES = frozenset({".pdf", ".docx", ".html", ".htm", ".xhtml", ".epub"})
TABLE_SUFFIXES = frozenset({".csv", ".tsv"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | CODE_SUFFIXES | STRUCTURED_SUFFIXES | TABLE_SUFFIXES


@dataclass(frozen=True)
class Document:
    """The text of one file, in reading order."""

    path: str
    kind: str  # "text", "markdown", "code", "pdf", "docx", "html", "epub", "csv"
    sections: tuple[Section, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections if s.text)


def kind_of(name: str) -> str:
    """The extractor for a file name; raises DocumentError for a type Hearth does not read."""
    suffix = Path(name).suffix.lower()
    if suffix in {".md", ".markdown"}:
        return "markdown"
    if suffix in TEXT_SUFFIXES or suffix == "":
        return "text"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in TABLE_SUFFIXES:
        return "csv"
    if suffix in {".html", ".htm", ".xhtml"}:
        return "html"
    if suffix in {".pdf", ".docx", ".epub"}:
        return suffix[1:]
    raise DocumentError(f"{Path(name).name}: Hearth does not read {suffix} files")


def extract_file(path: Path) -> Document:
    """Read ``path`` into a Document (size-capped; every failure is a DocumentError)."""
    kind = kind_of(path.name)
    return extract_bytes(str(path), read_regular(path), kind)


def read_regular(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file within the size cap, else DocumentError.

    The file is opened without blocking and checked on the open descriptor, so a FIFO, a
    device (/dev/zero, /dev/urandom), a socket or a file swapped for one after a check is
    refused before a byte is read."""
    name = path.name
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY)
    except FileNotFoundError:
        raise DocumentError(f"{name}: the file is gone (moved or deleted)") from None
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(
                f"{name}: not a regular file (a {_file_kind(info.st_mode)}); "
                "Hearth reads only regular files"
            )
        check_size(name, info.st_size)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(MAX_FILE_BYTES + 1)  # a file growing while read stops here too
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    check_size(name, len(data))
    return data


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "folder" if stat.S_ISDIR(mode) else "special file"


def extract_text(name: str, data: bytes) -> Document:
    """Read bytes that came without a file on disk (an attachment, a paste) named ``name``."""
    check_size(name, len(data))
    return extract_bytes(name, data, kind_of(name))


def check_size(name: str, size: int) -> None:
    if size > MAX_FILE_BYTES:
        raise DocumentError(
            f"{Path(name).name}: {size / 2**20:,.0f} MB is over Hearth's "
            f"{MAX_FILE_BYTES // 2**20} MB limit for one document; split it first"
        )


def extract_bytes(
    path: str, data: bytes, kind: str, cancel: threading.Event | None = None
) -> Document:
    """The sections of ``data``, a file of type ``kind``; ``cancel`` stops it (ReadCancelled)."""
    name = Path(path).name
    budget = TextBudget(name, cancel=cancel)
    try:
        sections = _sections(name, data, kind, budget, tsv=path.lower().endswith(".tsv"))
    except (DocumentError, ReadCancelled):
        raise
    except RecursionError:
        raise DocumentError(f"{name}: nested too deeply to read; refused") from None
    except MemoryError:
        raise DocumentError(f"{name}: too large to read in memory; refused") from None
    except Exception as exc:  # a parser library broken by a file nobody foresaw: one file skipped
        reason = one_line(f"{type(exc).__name__}: {exc}", 160)
        raise DocumentError(f"{name}: not a readable {kind} file ({reason})") from None
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise DocumentError(f"{name}: no text in it")
    return Document(path, kind, tuple(sections))


def _sections(name: str, data: bytes, kind: str, budget: TextBudget, tsv: bool) -> list[Section]:
    if kind == "pdf":
        return formats.pdf_sections(name, data, budget)
    if kind == "docx":
        return docx_sections(name, data, budget)
    if kind == "epub":
        return formats.epub_sections(name, data, budget)
    text = decode_text(name, data)
    budget.take(len(text))  # the decoded text itself: no more than its bytes
    again = TextBudget(name, cancel=budget.cancel)  # what they make from it, charged afresh
    if kind == "html":
        return html_sections(text, again)
    if kind == "csv":
        return csv_sections(text, delimiter="\t" if tsv else ",", budget=again)
    if kind == "markdown":
        return markdown_sections(text, budget=again)
    return [Section(text)]


def markdown_sections(text: str, budget: TextBudget | None = None) -> list[Section]:
    """Split at ATX headings (outside code fences); each section's locator is its heading path.
    Locators are charged to ``budget``: each names the headings above it."""
    budget = budget or TextBudget("markdown")
    sections: list[Section] = []
    path: list[str] = []
    lines: list[str] = []
    fenced = False

    def add(section: Section) -> None:
        budget.take(len(section.text) + len(section.locator))
        sections.append(section)

    def flush() -> None:
        if lines and "".join(lines).strip():
            add(Section("\n".join(lines).strip("\n"), " › ".join(path)))
        lines.clear()

    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        level = _heading_level(line) if not fenced else 0
        if level:
            flush()
            title = line.strip().lstrip("#").strip().rstrip("#").strip()
            del path[level - 1 :]
            path.extend([""] * (level - 1 - len(path)))
            path.append(title[:MAX_TITLE_CHARS])
            path[:] = [p for p in path if p]
            add(Section(line.strip(), " › ".join(path), heading=True))
            continue
        lines.append(line)
    flush()
    return sections


def _heading_level(line: str) -> int:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return 0
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if hashes > 6 or (len(stripped) > hashes and stripped[hashes] not in " \t"):
        return 0
    return hashes


def csv_sections(
    text: str, delimiter: str = ",", budget: TextBudget | None = None
) -> list[Section]:
    """Rows as "header: value" lines, grouped so each section names its rows. Each line is
    charged to ``budget`` as it is made: a wide header repeats on every row."""
    budget = budget or TextBudget("table")
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return [Section(text)]
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    sections = []
    for start in range(0, len(body), CSV_ROWS_PER_SECTION):
        group = body[start : start + CSV_ROWS_PER_SECTION]
        lines = []
        for row in group:
            lines.append("; ".join(_cell(header, i, v) for i, v in enumerate(row) if v))
            budget.take(len(lines[-1]) + 1)
        end = start + len(group)
        sections.append(Section("\n".join(lines), f"rows {start + 1}–{end}"))
    return sections or [Section(", ".join(header), "header")]


def _cell(header: list[str], i: int, value: str) -> str:
    return f"{header[i]}: {value}" if i < len(header) and header[i] else value
