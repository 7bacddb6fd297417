"""The structured formats: PDF (text layer), DOCX, HTML and EPUB, to `Section` lists.

Owns reading each format within bounds: PDFs through PDFium (pypdfium2: fast, in C, and a
broken file fails rather than hangs), DOCX through python-docx after a zip guard, HTML through
the standard library's parser, EPUB (a zip of XHTML files in a spine order) by hand with the
same guard. The zip guard checks both the declared and the actual uncompressed sizes, so a zip
bomb costs at most ``MAX_UNZIPPED_BYTES`` of reading. Does not own the size cap of the file
itself, text decoding or chunking (`app.documents.extract`).
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from html.parser import HTMLParser
from xml.etree import ElementTree

from app.documents.sections import DocumentError, Section, decode_text

MAX_UNZIPPED_BYTES = 256 * 1024 * 1024  # all members of one DOCX/EPUB, declared or actual
MAX_MEMBERS = 10_000
MAX_PDF_PAGES = 10_000
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "section", "article", "blockquote", "pre", "table", "ul"}
    | {"ol", "dd", "dt", "figcaption", "hr", "td", "th", "header", "footer", "main"}
)
_PARAGRAPH_TAGS = frozenset({"p", "div", "blockquote", "pre", "table", "ul", "ol", "section"})
_SKIPPED_TAGS = frozenset({"script", "style", "head", "noscript", "template", "svg", "nav"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


# ---- PDF -------------------------------------------------------------------------------------


def pdf_sections(name: str, data: bytes) -> list[Section]:
    """One section per page with text; refuses encrypted and text-less (scanned) PDFs."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DocumentError(
                f"{name}: the PDF is encrypted; remove its password first"
            ) from None
        raise DocumentError(f"{name}: not a readable PDF ({exc})") from None
    try:
        pages = len(pdf)
        if pages > MAX_PDF_PAGES:
            raise DocumentError(f"{name}: {pages:,} pages is over the {MAX_PDF_PAGES:,} page limit")
        sections = [Section(text, f"page {i + 1}") for i, text in _page_texts(pdf, pages)]
    finally:
        pdf.close()
    if not sections:
        raise DocumentError(f"{name}: no text layer (a scan?); Hearth does not do OCR")
    return sections


def _page_texts(pdf: object, pages: int) -> list[tuple[int, str]]:
    texts = []
    for i in range(pages):
        page = pdf[i]  # type: ignore[index]
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n")
        finally:
            textpage.close()
            page.close()
        if text.strip():
            texts.append((i, text.strip()))
    return texts


# ---- zip containers (DOCX, EPUB) -------------------------------------------------------------


def open_zip(name: str, data: bytes, what: str) -> zipfile.ZipFile:
    """The archive, after checking the declared sizes and reading every member within bounds."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise DocumentError(f"{name}: not a valid {what} file (damaged or renamed?)") from None
    declared = sum(m.file_size for m in members)
    if len(members) > MAX_MEMBERS or declared > MAX_UNZIPPED_BYTES:
        raise DocumentError(f"{name}: unpacks to over {MAX_UNZIPPED_BYTES // 2**20} MB; refused")
    budget = MAX_UNZIPPED_BYTES
    for member in members:  # declared sizes can lie: count what actually comes out
        budget -= len(read_member(name, archive, member.filename, budget))
    return archive


def read_member(name: str, archive: zipfile.ZipFile, member: str, limit: int) -> bytes:
    out = bytearray()
    try:
        with archive.open(member) as stream:
            while chunk := stream.read(1 << 20):
                out += chunk
                if len(out) > limit:
                    raise DocumentError(
                        f"{name}: unpacks to over {MAX_UNZIPPED_BYTES // 2**20} MB; refused"
                    )
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise DocumentError(f"{name}: a damaged part inside ({exc})") from None
    except RuntimeError as exc:  # an encrypted member
        raise DocumentError(f"{name}: encrypted or unreadable ({exc})") from None
    return bytes(out)


# ---- DOCX ------------------------------------------------------------------------------------


def docx_sections(name: str, data: bytes) -> list[Section]:
    """Paragraphs and tables in order; Heading styles start sections named by heading path."""
    open_zip(name, data, "DOCX")
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises many types for a broken package
        raise DocumentError(f"{name}: not a readable DOCX file ({exc})") from None
    builder = _SectionBuilder()
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                builder.text(" | ".join(cell.text.strip() for cell in row.cells))
            continue
        level = _docx_heading_level(block.style.name if block.style is not None else "")
        if level:
            builder.heading(level, block.text.strip())
        else:
            builder.text(block.text)
    return builder.finish()


def _docx_heading_level(style: str) -> int:
    if style == "Title":
        return 1
    if style.startswith("Heading "):
        tail = style.removeprefix("Heading ")
        return int(tail) if tail.isdigit() else 0
    return 0


# ---- HTML ------------------------------------------------------------------------------------


class _SectionBuilder:
    """Collects text under a heading path; a heading closes the running section."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.path: list[str] = []
        self.lines: list[str] = []
        self.sections: list[Section] = []

    def locator(self) -> str:
        return " › ".join([p for p in [self.prefix, *self.path] if p])

    def text(self, line: str) -> None:
        self.lines.append(line)

    def heading(self, level: int, title: str) -> None:
        self.flush()
        if not title:
            return
        del self.path[level - 1 :]
        self.path.append(title)
        self.sections.append(Section(title, self.locator(), heading=True))

    def flush(self) -> None:
        text = "\n".join(line.rstrip() for line in self.lines).strip()
        text = "\n".join(_collapse_blank_lines(text.split("\n")))
        if text:
            self.sections.append(Section(text, self.locator()))
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


class _HtmlText(HTMLParser):
    def __init__(self, builder: _SectionBuilder) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = builder
        self.skip = 0
        self.run: list[str] = []
        self.heading_level = 0
        self.heading_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip += 1
        elif tag in _HEADINGS:
            self.end_line()
            self.heading_level, self.heading_text = _HEADINGS[tag], []
        elif tag in _BLOCK_TAGS:
            self.end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS and self.heading_level:
            title = " ".join("".join(self.heading_text).split())
            self.builder.heading(self.heading_level, title)
            self.heading_level = 0
        elif tag in _BLOCK_TAGS:
            self.end_line()
            if tag in _PARAGRAPH_TAGS:
                self.builder.text("")  # a blank line: the chunker's paragraph break

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        (self.heading_text if self.heading_level else self.run).append(data)

    def end_line(self) -> None:
        line = " ".join("".join(self.run).split())
        if line:
            self.builder.text(line)
        self.run = []


def html_sections(text: str, prefix: str = "") -> list[Section]:
    builder = _SectionBuilder(prefix)
    parser = _HtmlText(builder)
    parser.feed(text)
    parser.close()
    parser.end_line()
    return builder.finish()


# ---- EPUB ------------------------------------------------------------------------------------

_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}
_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}


def epub_sections(name: str, data: bytes) -> list[Section]:
    """The spine's XHTML files in reading order, each through the HTML extractor."""
    archive = open_zip(name, data, "EPUB")
    try:
        container = _xml(name, read_member(name, archive, "META-INF/container.xml", 1 << 20))
        rootfile = container.find(".//c:rootfile", _CONTAINER_NS)
        opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
        opf = _xml(name, read_member(name, archive, opf_path, 16 << 20))
    except KeyError:
        raise DocumentError(f"{name}: not a valid EPUB (no package file)") from None
    manifest = {
        item.get("id"): item.get("href", "")
        for item in opf.iterfind(".//opf:manifest/opf:item", _OPF_NS)
    }
    base = posixpath.dirname(opf_path)
    sections: list[Section] = []
    for number, ref in enumerate(opf.iterfind(".//opf:spine/opf:itemref", _OPF_NS), start=1):
        href = manifest.get(ref.get("idref"))
        if not href:
            continue
        member = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
        try:
            page = read_member(name, archive, member, MAX_UNZIPPED_BYTES)
        except KeyError:
            continue  # a spine entry with no file: skip it, keep the rest
        sections += html_sections(decode_text(name, page), prefix=f"chapter {number}")
    return sections


def _xml(name: str, data: bytes) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise DocumentError(f"{name}: damaged EPUB metadata ({exc})") from None
