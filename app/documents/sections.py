"""What every document extractor shares: the error, the section record and decoding text.

Owns `DocumentError` (a one-line message for the user), `Section` (a run of text and where it
is in its file) and `decode_text` (bytes of a text file to str, binary refused). Both
`app.documents.extract` (the dispatch and plain-text formats) and `app.documents.formats` (PDF,
DOCX, HTML, EPUB) build on it. Does not own choosing an extractor.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


class DocumentError(Exception):
    """A file that cannot be read as a document; ``str(e)`` is a one-line message for the user."""


@dataclass(frozen=True)
class Section:
    """A run of text and where it is in its file ("page 3", "Intro › Setup", "rows 1–40")."""

    text: str
    locator: str = ""
    heading: bool = False  # a Markdown/DOCX/HTML heading line: chunks start after it


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
