"""Hostile documents of issue 34's audit, written by the tests: each a few KB that once cost
gigabytes, minutes or a traceback. Built from bytes and zipfile, so each is exactly the attack.
"""

from __future__ import annotations

import io
import threading
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_TYPES = (
    '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-'
    'package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
    'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
    'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)


def bounded(work: Callable[[], T], seconds: float) -> T:
    """``work()`` on a daemon thread; fails the test if it has not finished in ``seconds``
    (a hang, such as opening a FIFO, fails instead of stalling the run)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed back to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def docx_bytes(body: str, *, damage: bool = False, doctype: str = "") -> bytes:
    """A minimal DOCX whose body is ``body`` (WordprocessingML); ``damage`` breaks the deflate
    stream of word/document.xml (zlib.error on reading it); ``doctype`` goes before the root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", _TYPES)
        z.writestr("_rels/.rels", _RELS)
        z.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?>{doctype}<w:document {_W}><w:body>{body}</w:body></w:document>',
        )
    data = bytearray(buffer.getvalue())
    if damage:
        start = data.find(b"word/document.xml") + len(b"word/document.xml") + 10
        data[start : start + 8] = b"\xff" * 8
    return bytes(data)


def table_docx(cell_properties: str) -> bytes:
    """A paragraph, then a 2-row table whose first cell has ``cell_properties`` (w:tcPr)."""
    cell = "<w:tc>{}<w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>"
    return docx_bytes(
        "<w:p><w:r><w:t>Before the table</w:t></w:r></w:p><w:tbl>"
        f"<w:tr>{cell.format(cell_properties, 'first')}{cell.format('', 'second')}</w:tr>"
        f"<w:tr>{cell.format('', 'third')}{cell.format('', 'fourth')}</w:tr></w:tbl>"
    )


def epub_bytes(chapters: dict[str, str], spine: list[str]) -> bytes:
    """An EPUB whose manifest holds ``chapters`` (id -> XHTML body) and whose spine lists
    ``spine`` (ids, repeats allowed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
            'opendocument:xmlns:container"><rootfiles><rootfile full-path="c.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="{i}" href="{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in chapters
        )
        refs = "".join(f'<itemref idref="{i}"/>' for i in spine)
        z.writestr(
            "c.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f"<manifest>{items}</manifest><spine>{refs}</spine></package>",
        )
        for i, body in chapters.items():
            z.writestr(f"{i}.xhtml", f"<html><body>{body}</body></html>")
    return buffer.getvalue()


def shared_stream_pdf(pages: int, content: bytes) -> bytes:
    """A PDF of ``pages`` pages that all draw the one (deflated) content stream ``content``:
    a small file whose reading work is pages x stream."""
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (" ".join(f"{5 + i} 0 R" for i in range(pages)).encode(), pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 3 0 R >> >> >>"
    )
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
