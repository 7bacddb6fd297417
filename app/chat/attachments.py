"""Documents attached to a chat message: what one is, how it is read, and how it enters the prompt.

Owns the `Attachment` record (a name and its extracted text, identified by the SHA-256 of that
text, so the same document attached twice is stored once), reading one from a file or a long
paste, and the two ways attachments reach the model:

* whole, when they fit: one clearly delimited block per file, put *first* in the user message so
  that the same document asked about again starts the prompt with the same tokens (the engine's
  prefix cache then skips re-reading it; see `app.chat.document_context`);
* as numbered passages chosen per question when they do not fit (`sources_block`), with the
  instruction to cite them as [1], [2].

Extraction of PDF, DOCX, HTML, CSV, EPUB … belongs to `app.documents`; a file of another type is
read here when it is text. Qt-free; call the readers off the GUI thread (they touch the disk).
Does not own storage (`app.store.attachments`), retrieval or widgets.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASTE_THRESHOLD_CHARS = 2000  # a paste longer than this becomes an attachment chip
MAX_FILE_BYTES = 64 * 1024 * 1024  # refuse bigger files up front (bounded time and memory)
MAX_TEXT_CHARS = 8 * 1024 * 1024  # an extracted text longer than this is refused


class AttachmentError(Exception):
    """A file that cannot be attached; ``str()`` is the one-line message shown to the user."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """One attached document: its name (a file name or "Pasted text 1") and extracted text."""

    name: str
    text: str
    size: int = 0  # bytes of the original file (or of the pasted text, UTF-8)
    kind: str = "text"  # "text", "pdf", "docx", "html", … (what it was read as)
    tokens: int | None = None  # the model's count for ``text`` (None until counted)
    sha256: str = field(default="")
    # Where each part of ``text`` lies in the file: (offset, "page 3" / "Setup › Linux").
    sections: tuple[tuple[int, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.sha256:
            object.__setattr__(self, "sha256", text_hash(self.text))

    def counted(self, tokens: int | None) -> Attachment:
        return dataclasses.replace(self, tokens=tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "size": self.size, "kind": self.kind,
                "tokens": self.tokens, "sha256": self.sha256,
                "sections": [list(s) for s in self.sections]}  # fmt: skip


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def from_paste(text: str, number: int) -> Attachment:
    """A long paste as an attachment named "Pasted text N"."""
    return Attachment(f"Pasted text {number}", text, len(text.encode("utf-8", "replace")), "paste")


def read_file(path: Path) -> Attachment:
    """Read ``path`` as an attachment; `AttachmentError` with a one-line reason otherwise."""
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise AttachmentError(f"{name}: cannot be read ({exc.strerror or exc})") from exc
    if not path.is_file():
        raise AttachmentError(f"{name}: not a file")
    if size > MAX_FILE_BYTES:
        raise AttachmentError(
            f"{name}: too large to attach ({size / 2**20:.0f} MB; the limit is "
            f"{MAX_FILE_BYTES // 2**20} MB)"
        )
    text, kind, sections = _extract(path, name)
    if not text.strip():
        raise AttachmentError(f"{name}: has no text to read")
    if len(text) > MAX_TEXT_CHARS:
        raise AttachmentError(f"{name}: its text is too long to attach ({len(text):,} characters)")
    return Attachment(name, text, size, kind, sections=sections)


def _read_text(path: Path, name: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AttachmentError(f"{name}: cannot be read ({exc.strerror or exc})") from exc
    return decode_text(data, name)


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (with or without BOM) or UTF-16 with a BOM; binary data is refused by name."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    elif b"\x00" not in data[:65536]:
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            pass
    raise AttachmentError(f"{name}: is not text (binary data or an unknown encoding)")


def _extract(path: Path, name: str) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """PDF, DOCX, HTML, CSV, EPUB, text in any of its encodings: `app.documents` reads them; a
    file type it does not know is read as text when it is text, else refused by name."""
    try:
        from app.documents import SUPPORTED_SUFFIXES, DocumentError, extract_file
    except ImportError:  # the document readers are not installed: plain text only
        return _read_text(path, name), "text", ()
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        return _read_text(path, name), "text", ()
    try:
        doc = extract_file(path)
    except DocumentError as exc:
        raise AttachmentError(str(exc)) from exc
    # Offsets into doc.text (its sections joined by blank lines), one per change of place.
    sections: list[tuple[int, str]] = []
    offset = 0
    for section in (s for s in doc.sections if s.text):
        if section.locator and (not sections or sections[-1][1] != section.locator):
            sections.append((offset, section.locator))
        offset += len(section.text) + 2
    return doc.text, str(doc.kind or path.suffix.lstrip(".").lower()), tuple(sections)


# -- into the prompt ----------------------------------------------------------------------------
def document_block(attachments: Sequence[Attachment]) -> str:
    """The attachments whole, one delimited block per file, numbered for citing."""
    parts = [
        f'<document index="{n}" name="{_attr(a.name)}">\n{a.text.strip()}\n</document>'
        for n, a in enumerate(attachments, 1)
    ]
    return "\n".join(parts)


def with_documents(text: str, attachments: Sequence[Attachment]) -> str:
    """A user message carrying its documents whole: the documents first (a stable prefix for
    the KV cache), then the user's own words."""
    if not attachments:
        return text
    return f"{document_block(attachments)}\n\n{text}"


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")


def human_size(size: int) -> str:
    """ "812 B", "14.2 KB", "3.1 MB"."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 2**20:.1f} MB"
