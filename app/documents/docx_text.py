"""DOCX to text sections, streamed through expat: paragraphs, headings and table rows.

Owns reading a Word document's main part and its style names without building a tree:
paragraphs in order, a paragraph whose style is Title or Heading N starts a section, and each
row of a table is one line of its cells' text joined by " | ". Each ``w:tc`` is read once as
written: a cell's ``gridSpan`` and ``vMerge`` are layout, not text, so a span of 1,500,000,000
columns or a merge in the first row costs nothing (python-docx expanded such a span into a list
of cells, 3 GB in 21 s, and raised on the others). Text is charged to the file's `TextBudget`
as it arrives; a DOCTYPE (never in a real DOCX) is refused. Text boxes and a drawing's
fallback content are left out, as python-docx did. Does not own the zip guard
(`app.documents.formats.open_zip`).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from collections.abc import Callable
from typing import IO
from xml.etree import ElementTree
from xml.parsers import expat

from app.documents.formats import open_zip, read_member
from app.documents.sections import DocumentError, Section, SectionBuilder, TextBudget

MAX_XML_DEPTH = 1_000  # a real document nests a few dozen elements
_SKIPPED = frozenset({"txbxContent", "Fallback", "drawing", "pict", "object", "delText"})
_RUN_CHARS = {"tab": "\t", "ptab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "-"}
_HEADING_STYLE = re.compile(r"heading\s*([1-9])")


def docx_sections(name: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Paragraphs and tables in order; Heading styles start sections named by heading path."""
    archive = open_zip(name, data, "DOCX")
    main = _related(name, archive, "_rels/.rels", "", "/officeDocument") or "word/document.xml"
    folder = posixpath.dirname(main)
    rels = posixpath.join(folder, "_rels", posixpath.basename(main) + ".rels")
    styles_part = _related(name, archive, rels, folder, "/styles")
    styles = _style_names(name, archive, styles_part) if styles_part else {}
    builder = SectionBuilder(budget)
    body = _BodyReader(name, styles, builder)
    try:
        with archive.open(main) as stream:
            _parse(name, stream, body.start, body.end, body.chars)
    except KeyError:
        raise DocumentError(f"{name}: not a valid DOCX file (no document part)") from None
    return builder.finish()


StartHandler = Callable[[str, dict[str, str]], None]
EndHandler = Callable[[str], None]
TextHandler = Callable[[str], None]


def _parse(
    name: str, stream: IO[bytes], start: StartHandler, end: EndHandler, chars: TextHandler
) -> None:
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.StartDoctypeDeclHandler = _refuse_doctype(name)
    try:
        parser.ParseFile(stream)
    except expat.ExpatError as exc:
        raise DocumentError(f"{name}: damaged DOCX ({exc})") from None
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise DocumentError(f"{name}: a damaged part inside ({exc})") from None


def _refuse_doctype(name: str) -> Callable[[str, str | None, str | None, bool], None]:
    def refuse(_doctype: str, _system: str | None, _public: str | None, _internal: bool) -> None:
        raise DocumentError(f"{name}: a DOCX part declares a DOCTYPE; refused")

    return refuse


def _local(tag: str) -> str:
    return tag.rsplit(" ", 1)[-1]  # "namespace local" from expat, or a bare name


def _attr(attrs: dict[str, str], local: str) -> str:
    for key, value in attrs.items():
        if _local(key) == local:
            return value
    return ""


def _related(name: str, archive: zipfile.ZipFile, rels: str, folder: str, kind: str) -> str | None:
    """The part a relationships file points to with a Type ending in ``kind``."""
    try:
        root = ElementTree.fromstring(read_member(name, archive, rels, 1 << 20))
    except (KeyError, ElementTree.ParseError):
        return None
    for rel in root:
        if rel.get("Type", "").endswith(kind) and rel.get("TargetMode") != "External":
            target = rel.get("Target", "")
            path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
            return posixpath.normpath(path)
    return None


def _style_names(name: str, archive: zipfile.ZipFile, part: str) -> dict[str, str]:
    """Style id -> style name ("Heading1" -> "heading 1")."""
    names: dict[str, str] = {}
    current: list[str] = [""]

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = _local(tag)
        if local == "style":
            current[0] = _attr(attrs, "styleId")
        elif local == "name" and current[0]:
            names[current[0]] = _attr(attrs, "val")

    try:
        with archive.open(part) as stream:
            _parse(name, stream, start, lambda _tag: None, lambda _text: None)
    except KeyError:
        return {}
    return names


def heading_level(style_id: str, styles: dict[str, str]) -> int:
    """1 for Title, N for Heading N, else 0 (by style name; the id when styles.xml lacks it)."""
    style = (styles.get(style_id) or style_id).lower()
    if style == "title":
        return 1
    match = _HEADING_STYLE.fullmatch(style)
    return int(match.group(1)) if match else 0


class _BodyReader:
    """expat handlers for the main part: paragraphs to lines, outermost table rows to lines."""

    def __init__(self, name: str, styles: dict[str, str], builder: SectionBuilder) -> None:
        self.name = name
        self.styles = styles
        self.builder = builder
        self.stack: list[str] = []  # local names of the open elements
        self.skip = 0  # > 0 inside a text box or a drawing's fallback
        self.paragraphs = 0  # > 1 only in malformed nesting: the outer paragraph collects
        self.text: list[str] = []
        self.style = ""
        self.in_t = False
        self.tables = 0
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if len(self.stack) >= MAX_XML_DEPTH:
            raise DocumentError(f"{self.name}: nested over {MAX_XML_DEPTH} elements deep; refused")
        local = _local(tag)
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(local)
        if self.skip or local in _SKIPPED:
            self.skip += 1
            return
        if local == "p":
            self.paragraphs += 1
            if self.paragraphs == 1:
                self.text, self.style = [], ""
        elif local == "pStyle" and self.paragraphs:
            self.style = _attr(attrs, "val")
        elif local == "t" and self.paragraphs:
            self.in_t = True
        elif local in _RUN_CHARS and parent == "r" and self.paragraphs:
            self.chars(_RUN_CHARS[local], always=True)
        elif local == "tbl":
            self.tables += 1
        elif local == "tr" and self.tables == 1:
            self.row = []
        elif local == "tc" and self.tables == 1:
            self.cell = []

    def end(self, tag: str) -> None:
        if self.stack:
            self.stack.pop()
        if self.skip:
            self.skip -= 1
            return
        local = _local(tag)
        if local == "t":
            self.in_t = False
        elif local == "p" and self.paragraphs:
            self.paragraphs -= 1
            if not self.paragraphs:
                self.end_paragraph()
        elif local == "tc" and self.tables == 1 and self.cell is not None:
            if self.row is not None:
                self.row.append("\n".join(self.cell).strip())
            self.cell = None
        elif local == "tr" and self.tables == 1 and self.row is not None:
            self.builder.text(" | ".join(self.row))
            self.row = None
        elif local == "tbl":
            self.tables = max(0, self.tables - 1)

    def chars(self, data: str, always: bool = False) -> None:
        if (self.in_t or always) and not self.skip and self.paragraphs:
            self.builder.budget.take(len(data))  # charged as it arrives
            self.text.append(data)

    def end_paragraph(self) -> None:
        text = "".join(self.text)
        self.text = []
        if self.cell is not None:
            self.cell.append(text)  # its characters were charged in `chars`
            return
        level = heading_level(self.style, self.styles)
        if level:
            self.builder.heading(level, text.strip())
        else:
            self.builder.lines.append(text)  # charged in `chars`
