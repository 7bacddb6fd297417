"""Turning a file into text sections, safely.

Owns the dispatch by file type, the guards every file goes through first (a size cap, binary
garbage under a text name, text encoding detection) and the plain-text formats (text, Markdown,
source code, CSV). The structured formats (PDF, DOCX, HTML, EPUB) live in
`app.documents.formats`. Every failure is a `DocumentError` whose message is one line naming the
file and what to do. Does not own chunking, storage or retrieval.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from app.documents import formats  # the structured formats import their libraries lazily
from app.documents.sections import DocumentError, Section, decode_text

MAX_FILE_BYTES = 200 * 1024 * 1024  # larger files are refused before reading a byte
MAX_TEXT_CHARS = 20_000_000  # extracted text per file (about 5M tokens)
CSV_ROWS_PER_SECTION = 40

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
    name = path.name
    kind = kind_of(name)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DocumentError(f"{name}: the file is gone (moved or deleted)") from None
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    check_size(name, size)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    return extract_bytes(str(path), data, kind)


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


def extract_bytes(path: str, data: bytes, kind: str) -> Document:
    name = Path(path).name
    if kind == "pdf":
        sections = formats.pdf_sections(name, data)
    elif kind == "docx":
        sections = formats.docx_sections(name, data)
    elif kind == "epub":
        sections = formats.epub_sections(name, data)
    elif kind == "html":
        sections = formats.html_sections(decode_text(name, data))
    elif kind == "csv":
        sections = csv_sections(
            decode_text(name, data), delimiter="\t" if path.lower().endswith(".tsv") else ","
        )
    elif kind == "markdown":
        sections = markdown_sections(decode_text(name, data))
    else:
        sections = [Section(decode_text(name, data))]
    sections = [s for s in sections if s.text.strip()]
    if sum(len(s.text) for s in sections) > MAX_TEXT_CHARS:
        raise DocumentError(f"{name}: over {MAX_TEXT_CHARS:,} characters of text; split it first")
    if not sections:
        raise DocumentError(f"{name}: no text in it")
    return Document(path, kind, tuple(sections))


def markdown_sections(text: str) -> list[Section]:
    """Split at ATX headings (outside code fences); each section's locator is its heading path."""
    sections: list[Section] = []
    path: list[str] = []
    lines: list[str] = []
    fenced = False

    def flush() -> None:
        if lines and "".join(lines).strip():
            sections.append(Section("\n".join(lines).strip("\n"), " › ".join(path)))
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
            path.append(title)
            path[:] = [p for p in path if p]
            sections.append(Section(line.strip(), " › ".join(path), heading=True))
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


def csv_sections(text: str, delimiter: str = ",") -> list[Section]:
    """Rows as "header: value" lines, grouped so each section names its rows."""
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
        lines = ["; ".join(_cell(header, i, v) for i, v in enumerate(row) if v) for row in group]
        end = start + len(group)
        sections.append(Section("\n".join(lines), f"rows {start + 1}–{end}"))
    return sections or [Section(", ".join(header), "header")]


def _cell(header: list[str], i: int, value: str) -> str:
    return f"{header[i]}: {value}" if i < len(header) and header[i] else value
