"""PDF (text layer) and EPUB to `Section` lists, and the zip guard DOCX and EPUB share.

Owns reading these formats within bounds: PDFs through PDFium (pypdfium2: fast, in C, and a
broken file fails rather than hangs), page by page with the text charged to the file's
`TextBudget` and a time budget checked between pages (pages can share one content stream, so
PDFium's work is not bounded by the file's size); EPUB (a zip of XHTML files in a spine order)
by hand, each chapter file read once however often the spine lists it. The zip guard checks both
the declared and the actual uncompressed sizes, so a zip bomb costs at most
``MAX_UNZIPPED_BYTES`` of reading; a damaged deflate stream is a refusal like any other damage.
Does not own HTML (`app.documents.html_text`), DOCX (`app.documents.docx_text`), the size cap of
the file itself, text decoding or chunking (`app.documents.extract`).
"""

from __future__ import annotations

import io
import posixpath
import time
import zipfile
import zlib
from xml.etree import ElementTree

from app.documents.html_text import html_sections
from app.documents.sections import DocumentError, Section, TextBudget, decode_text

MAX_UNZIPPED_BYTES = 256 * 1024 * 1024  # all members of one DOCX/EPUB, declared or actual
MAX_MEMBERS = 10_000
MAX_PDF_PAGES = 10_000
# PDFium's work per page follows the page's content stream, which every page may share: a
# 1.5 MB file of 9,999 pages took ~17 minutes. A real 2,000-page book reads in well under this.
MAX_PDF_SECONDS = 120.0


# ---- PDF -------------------------------------------------------------------------------------


def pdf_sections(name: str, data: bytes, budget: TextBudget) -> list[Section]:
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
        sections = [
            Section(text, f"page {i + 1}") for i, text in _page_texts(name, pdf, pages, budget)
        ]
    finally:
        pdf.close()
    if not sections:
        raise DocumentError(f"{name}: no text layer (a scan?); Hearth does not do OCR")
    return sections


def _page_texts(name: str, pdf: object, pages: int, budget: TextBudget) -> list[tuple[int, str]]:
    texts = []
    deadline = time.monotonic() + MAX_PDF_SECONDS
    for i in range(pages):
        if time.monotonic() > deadline:
            raise DocumentError(
                f"{name}: reading its pages took over {MAX_PDF_SECONDS:.0f} s (stopped at page"
                f" {i + 1} of {pages:,}); refused"
            )
        page = pdf[i]  # type: ignore[index]
        textpage = page.get_textpage()
        try:
            budget.take(textpage.count_chars())  # before the page's text is copied out
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
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
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
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:
        raise DocumentError(f"{name}: a damaged part inside ({exc})") from None
    except RuntimeError as exc:  # an encrypted member
        raise DocumentError(f"{name}: encrypted or unreadable ({exc})") from None
    return bytes(out)


# ---- EPUB ------------------------------------------------------------------------------------

_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}
_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}


def epub_sections(name: str, data: bytes, budget: TextBudget) -> list[Section]:
    """The spine's XHTML files in reading order, each through the HTML extractor once: a spine
    that lists a chapter again (epubcheck's OPF-034) does not read it again."""
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
    read: set[str] = set()
    for number, ref in enumerate(opf.iterfind(".//opf:spine/opf:itemref", _OPF_NS), start=1):
        href = manifest.get(ref.get("idref"))
        if not href:
            continue
        member = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
        if member in read:
            continue
        read.add(member)
        try:
            page = read_member(name, archive, member, MAX_UNZIPPED_BYTES)
        except KeyError:
            continue  # a spine entry with no file: skip it, keep the rest
        sections += html_sections(decode_text(name, page), budget, prefix=f"chapter {number}")
    return sections


def _xml(name: str, data: bytes) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise DocumentError(f"{name}: damaged EPUB metadata ({exc})") from None
