"""Real documents of every supported type, written by the tests (no fixtures on disk).

The PDF is written by hand (one Helvetica text object per page, a correct xref table), so
the extractor reads what a real PDF producer writes; the DOCX by python-docx; the EPUB as the
zip of XHTML its specification describes.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF whose page i shows ``pages[i]`` (ASCII; "" makes a page with no text layer)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        page = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R"
            f" /Resources << /Font << /F1 {font} 0 R >> >> >>"
        )
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode() if text else b""
        objects.append(page.encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
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
    path.write_bytes(bytes(out))
    return path


def write_encrypted_pdf(path: Path, source: Path) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(source).pages:
        writer.add_page(page)
    writer.encrypt("secret", algorithm="RC4-128")
    with path.open("wb") as stream:
        writer.write(stream)
    return path


def write_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Zebras", level=1)
    document.add_paragraph("Zebras have black and white stripes that confuse biting flies.")
    document.add_heading("Habitat", level=2)
    document.add_paragraph("They live on the savannas of eastern Africa.")
    table = document.add_table(rows=2, cols=2)
    for r, (a, b) in enumerate([("species", "count"), ("plains zebra", "500000")]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    document.save(str(path))
    return path


def write_epub(path: Path, chapters: list[tuple[str, str]]) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{i}" href="text/c{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for i, (title, body) in enumerate(chapters):
            z.writestr(
                f"OEBPS/text/c{i}.xhtml",
                '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>'
                f"<body><h1>{title}</h1><p>{body}</p></body></html>",
            )
    path.write_bytes(buffer.getvalue())
    return path


def write_zip_bomb(path: Path, member: str, unpacked: int) -> Path:
    """A zip whose ``member`` unpacks to ``unpacked`` zero bytes (a few KB on disk)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        with z.open(member, "w", force_zip64=True) as stream:
            block = b"\0" * (1 << 20)
            for _ in range(unpacked >> 20):
                stream.write(block)
    return path
