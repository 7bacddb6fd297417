"""The passages a reply was given and cites as [1], [2]: the record, the prompt block, the marks.

Owns `Source` (file, page or heading, the quoted passage and the text around it, so the
reply's Sources fold and its "show in context" dialog need nothing else), its JSON form (saved
with the message, exported), the numbered block a question carries when its documents do not
fit whole, and finding which [n] marks a reply used. Qt-free. Does not own choosing the
passages (`app.chat.document_context`) or showing them (`app.views.documents`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_MARK = re.compile(r"\[(\d{1,3})\]")
CITE_INSTRUCTION = (
    "Answer from the numbered sources above. After each statement that uses a source, "
    "cite it as [1], [2] and so on. If the sources do not contain the answer, say so."
)


@dataclass(frozen=True, slots=True)
class Source:
    number: int  # the [n] the model was told to use
    file: str
    locator: str  # "page 3", "Setup › Install", "" when the file has no structure
    text: str  # the passage the model read
    before: str = ""  # the document text just before the passage (for "show in context")
    after: str = ""
    path: str = ""  # a collection's file on disk ("" for an attachment: the chat holds it)
    collection: str = ""  # the collection it came from ("" for an attachment)
    whole: bool = False  # a document the model read whole ("text" is its opening only)

    def to_dict(self) -> dict[str, Any]:
        d = {"n": self.number, "file": self.file, "locator": self.locator,
             "text": self.text, "before": self.before, "after": self.after}  # fmt: skip
        if self.path or self.collection:  # an attachment's form stays as it was
            d |= {"path": self.path, "collection": self.collection}
        if self.whole:
            d["whole"] = True
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Source:
        keys = ("file", "locator", "text", "before", "after", "path", "collection")
        fields = {k: str(d.get(k, "")) for k in keys}
        return cls(int(d["n"]), **fields, whole=d.get("whole") is True)

    def numbered(self, number: int) -> Source:
        return dataclasses.replace(self, number=number)


def sources_from_json(items: Iterable[Mapping[str, Any]]) -> list[Source]:
    """Sources from their saved form; malformed entries are skipped (an old or edited file)."""
    out = []
    for d in items:
        try:
            out.append(Source.from_dict(d))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def sources_block(sources: Sequence[Source]) -> str:
    """The passages as the model reads them: numbered, each naming its file and place."""
    parts = []
    for s in sources:
        where = f"{s.file}, {s.locator}" if s.locator else s.file
        parts.append(f"[{s.number}] ({where})\n{s.text.strip()}")
    return "<sources>\n" + "\n\n".join(parts) + "\n</sources>\n\n" + CITE_INSTRUCTION


def with_sources(question: str, sources: Sequence[Source]) -> str:
    """A question carrying the passages chosen for it (first, like whole documents)."""
    return f"{sources_block(sources)}\n\n{question}" if sources else question


def cited_numbers(reply: str) -> list[int]:
    """The distinct [n] marks in ``reply``, in order of first use."""
    seen: list[int] = []
    for m in _MARK.finditer(reply):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def markdown_section(sources: Sequence[Source]) -> str:
    """The Sources list for a Markdown export (a quote per passage)."""
    if not sources:
        return ""
    lines = ["**Sources**", ""]
    for s in sources:
        name = f"{s.file} ({s.collection})" if s.collection else s.file
        where = f"{name}, {s.locator}" if s.locator else name
        quote = " ".join(s.text.split())
        lines.append(f"[{s.number}] {where}: “{quote[:300]}{'…' if len(quote) > 300 else ''}”")
        lines.append("")
    return "\n".join(lines)
