"""HTML to text sections in one linear pass (EPUB chapters and attachments come through here).

Owns a small tokenizer for HTML and XHTML: it finds tags, comments, CDATA and the raw text of
``script``/``style`` with `str.find` and anchored patterns that never look past the next ``<``,
so every character is looked at a bounded number of times whatever the markup. The standard
library's `HTMLParser` rescans the rest of the input at each unclosed ``<a b``: 40,000 of them
(160 KB) took 139 s. Text between tags is unescaped with `html.unescape`; block tags end
lines, headings start sections (`SectionBuilder`), and everything is charged to the file's
`TextBudget`. Does not own decoding bytes (`app.documents.sections.decode_text`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from app.documents.sections import Section, SectionBuilder, TextBudget

_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "section", "article", "blockquote", "pre", "table", "ul"}
    | {"ol", "dd", "dt", "figcaption", "hr", "td", "th", "header", "footer", "main"}
)
_PARAGRAPH_TAGS = frozenset({"p", "div", "blockquote", "pre", "table", "ul", "ol", "section"})
_SKIPPED_TAGS = frozenset({"script", "style", "head", "noscript", "template", "svg", "nav"})
_RAW_TEXT_TAGS = ("script", "style")  # their content is not markup (HTMLParser's CDATA content)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}

# One character class up to '>': a failed match stops at the next '<' (no backtracking between
# two classes, which would be quadratic in a long tag name with no '>').
_TAG = re.compile(r"<(/?)([A-Za-z][^<>]*)>")
_DECLARATION = re.compile(r"<[!?][^<>]*>")  # <!DOCTYPE ...>, <?xml ...?>
_NAME = re.compile(r"[^\s/]*")
_RAW_END = {t: re.compile(rf"</{t}(?=[\s/>])", re.IGNORECASE) for t in _RAW_TEXT_TAGS}

Token = tuple[str, str]  # ("text", data) | ("start", name) | ("end", name)


def tokens(markup: str) -> Iterator[Token]:
    """Text runs and tag names of ``markup`` in order, in time linear in its length."""
    pos, end = 0, len(markup)
    while pos < end:
        lt = markup.find("<", pos)
        if lt < 0:
            yield "text", html.unescape(markup[pos:])
            return
        if lt > pos:
            yield "text", html.unescape(markup[pos:lt])
        if markup.startswith("<!--", lt):
            close = markup.find("-->", lt + 4)
            pos = end if close < 0 else close + 3  # unclosed: a comment to the end (as browsers)
            continue
        if markup.startswith("<![CDATA[", lt):
            close = markup.find("]]>", lt + 9)
            yield "text", markup[lt + 9 : end if close < 0 else close]
            pos = end if close < 0 else close + 3
            continue
        tag = _TAG.match(markup, lt)
        if tag is None:
            declaration = _DECLARATION.match(markup, lt)
            if declaration is None:
                yield "text", "<"  # a '<' that opens no tag is text ("a < b")
                pos = lt + 1
            else:
                pos = declaration.end()
            continue
        pos = tag.end()
        body = tag.group(2)
        name = _NAME.match(body).group().lower()  # type: ignore[union-attr]  # always matches
        if tag.group(1):
            yield "end", name
            continue
        yield "start", name
        if body.endswith("/"):  # XHTML's <br/>, <p/>
            yield "end", name
        elif name in _RAW_END:
            closer = _RAW_END[name].search(markup, pos)
            raw_end = end if closer is None else closer.start()
            yield "text", markup[pos:raw_end]
            pos = raw_end  # the closing tag is read by the next round


class _HtmlText:
    """Turns tokens into lines and headings on a `SectionBuilder`."""

    def __init__(self, builder: SectionBuilder) -> None:
        self.builder = builder
        self.skip = 0
        self.run: list[str] = []
        self.heading_level = 0
        self.heading_text: list[str] = []

    def start(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip += 1
        elif tag in _HEADINGS:
            self.end_line()
            self.heading_level, self.heading_text = _HEADINGS[tag], []
        elif tag in _BLOCK_TAGS:
            self.end_line()

    def end(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS and self.heading_level:
            self.end_heading()
        elif tag in _BLOCK_TAGS:
            self.end_line()
            if tag in _PARAGRAPH_TAGS:
                self.builder.text("")  # a blank line: the chunker's paragraph break

    def data(self, text: str) -> None:
        if self.skip or not text:
            return
        self.builder.budget.take(len(text))  # charged as it grows, before it is kept
        (self.heading_text if self.heading_level else self.run).append(text)

    def end_heading(self) -> None:
        title = " ".join("".join(self.heading_text).split())
        self.builder.heading(self.heading_level, title)
        self.heading_level, self.heading_text = 0, []

    def end_line(self) -> None:
        line = " ".join("".join(self.run).split())
        if line:
            self.builder.lines.append(line)  # charged in `data`
        self.run = []


def html_sections(markup: str, budget: TextBudget, prefix: str = "") -> list[Section]:
    """The text of ``markup`` as sections named by heading path (``prefix`` first)."""
    builder = SectionBuilder(budget, prefix)
    reader = _HtmlText(builder)
    for kind, value in tokens(markup):
        if kind == "text":
            reader.data(value)
        elif kind == "start":
            reader.start(value)
        else:
            reader.end(value)
    if reader.heading_level:  # an unclosed heading still names what follows
        reader.end_heading()
    reader.end_line()
    return builder.finish()
