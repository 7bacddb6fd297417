"""Markdown rendering: output is inert, code blocks copy exactly, and Qt's rich-text engine
shows what was written (real QTextDocument, offscreen)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextBlock, QTextDocument, QTextTable

from app.markdown.render import (
    RenderLabels,
    document_css,
    extract_code_blocks,
    render_markdown,
)

ALLOWED_TAGS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "s", "code", "a", "br",
    "blockquote", "ol", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre",
    "span", "hr", "img",
}  # fmt: skip
ALLOWED_ATTRS = {
    "href", "style", "align", "border", "cellspacing", "cellpadding", "width", "bgcolor",
    "colspan", "start", "src", "height",
}  # fmt: skip
SAFE_HREF_PREFIXES = ("http://", "https://", "mailto:", "copy-code:")


class TagCollector(HTMLParser):
    """Every start tag with its attributes, as a browser-like parser sees them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def hrefs(self) -> list[str]:
        return [str(attrs["href"]) for tag, attrs in self.tags if tag == "a"]


def assert_inert(html: str) -> TagCollector:
    tags = TagCollector(html)
    for tag, attrs in tags.tags:
        assert tag in ALLOWED_TAGS, f"unexpected tag <{tag}> in {html!r}"
        assert set(attrs) <= ALLOWED_ATTRS, f"unexpected attributes {attrs} on <{tag}>"
    for href in tags.hrefs():
        assert href.startswith(SAFE_HREF_PREFIXES), f"unsafe href {href!r}"
    for tag, attrs in tags.tags:  # the only images are formulas the renderer typeset itself
        if tag == "img":
            assert str(attrs.get("src")).startswith("hearth-math:"), f"image {attrs}"
    return tags


def load(html: str, qapp: object) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc


HOSTILE = """\
<script>alert(1)</script>

<img src=x onerror=alert(2)>

<a href="javascript:alert(3)" onclick="alert(4)">click</a> <iframe src="http://x"></iframe>

<div style="background-image:url(http://track/me)">styled</div>
"""


def test_raw_html_is_escaped_text_not_markup(qapp: object) -> None:
    html = render_markdown(HOSTILE)
    tags = assert_inert(html)
    # Only paragraphs, plus links for the bare http URLs inside the (now textual) HTML.
    assert {tag for tag, _ in tags.tags} == {"p", "a"}
    assert tags.hrefs() == ["http://x", "http://track/me"]
    plain = load(html, qapp).toPlainText()
    assert "<script>alert(1)</script>" in plain
    assert "<img src=x onerror=alert(2)>" in plain
    assert 'onclick="alert(4)"' in plain


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "javascript&#58;alert(1)",
        "<javascript:alert(1)>",
        "data:text/html;base64,PHNjcmlwdD4=",
        "file:///etc/passwd",
        "vbscript:msgbox",
        "/relative/path",
        "#fragment",
    ],
)
def test_unsafe_link_keeps_text_and_drops_href(url: str) -> None:
    html = render_markdown(f"see [the docs]({url}) now")
    tags = assert_inert(html)
    assert tags.hrefs() == []
    assert "the docs" in html


def test_safe_links_are_links_with_escaped_href() -> None:
    html = render_markdown('[a](https://ex.com/?q="x"&r=1) [b](mailto:me@ex.com) <http://ex.org>')
    hrefs = assert_inert(html).hrefs()
    assert hrefs == ["https://ex.com/?q=%22x%22&r=1", "mailto:me@ex.com", "http://ex.org"]


@pytest.mark.parametrize(
    ("text", "hrefs"),
    [
        ("see https://example.com/a_(b). ok", ["https://example.com/a_(b)"]),
        ("访问https://example.cn/path。谢谢", ["https://example.cn/path"]),
        ("(https://x.org/y), `https://code.example`", ["https://x.org/y"]),
        ("[named](https://a.b) and <https://c.d>", ["https://a.b", "https://c.d"]),
        ("javascript:alert(1) https:// ftp://x.y", []),
    ],
)
def test_bare_http_urls_become_links(text: str, hrefs: list[str]) -> None:
    assert assert_inert(render_markdown(text)).hrefs() == hrefs


def test_images_are_never_loaded_only_linked_placeholders(qapp: object) -> None:
    text = (
        "![a cat](http://evil.example/cat.png) ![inline](data:image/png;base64,AAAA) "
        "[![badge](https://img/b.svg)](https://site.example)"
    )
    html = render_markdown(text)
    tags = assert_inert(html)
    assert "<img" not in html
    assert tags.hrefs() == ["http://evil.example/cat.png", "https://site.example"]

    requested: list[str] = []

    class RecordingDocument(QTextDocument):
        def loadResource(self, kind: int, name: QUrl) -> object:  # Qt override
            requested.append(name.toString())
            return super().loadResource(kind, name)

    doc = RecordingDocument()
    doc.setHtml(html)
    doc.setTextWidth(400)
    doc.size()  # forces layout, which is when Qt would fetch images
    assert requested == []
    plain = doc.toPlainText()
    assert "[image: a cat]" in plain and "[image: inline]" in plain and "[image: badge]" in plain


def test_markup_in_alt_text_language_and_labels_is_escaped() -> None:
    text = '![<img src=x onerror=y>](http://x/a.png)\n\n```"><script>x</script>\ncode\n```'
    labels = RenderLabels(copy="<b>Copy</b>", image='"><i>')
    html = render_markdown(text, labels=labels)
    assert_inert(html)
    assert "&lt;img src=x onerror=y&gt;" in html and "&lt;b&gt;Copy&lt;/b&gt;" in html
    assert "&lt;script&gt;" in html and "<script" not in html and "<i>" not in html


def test_labels_are_translatable() -> None:
    html = render_markdown(
        "![猫](https://x/c.png)\n\n```\nx\n```", labels=RenderLabels("复制", "图片")
    )
    assert "[图片: 猫]" in html and ">复制</a>" in html


CODE_SAMPLES = [
    "def f():\n\treturn 1  \n",  # tabs, trailing spaces, final blank line
    "    indented\n\t\tdouble tab\n  trailing   ",
    "print('你好，世界')  # 中文注释\nx = '日本語テキスト'",
    "echo `date` ``double`` ```triple```",
    "",
    "\n\nleading blank lines",
    "<script>alert('x')</script> & &amp; &lt;",
]


LANGUAGES = ["python", "", "py", "sh", "", "x", "html"]


def fenced(code: str, language: str = "") -> str:
    fence = "````" if "```" in code else "```"
    return f"{fence}{language}\n{code}\n{fence}"


def test_extract_code_blocks_round_trips_exactly() -> None:
    text = "Intro\n\n" + "\n\nbetween\n\n".join(
        fenced(code, lang) for code, lang in zip(CODE_SAMPLES, LANGUAGES, strict=True)
    )
    assert extract_code_blocks(text) == CODE_SAMPLES


def test_indented_tilde_and_nested_blocks_extract_in_order() -> None:
    text = (
        "para\n\n    indented code\n    \tkeeps tab\n\n"
        "~~~\nwith ``` inside\n~~~\n\n"
        "- item\n\n  ```js\n  let a = 1;\n    deeper\n  ```\n\n"
        "> ```\n> quoted code\n> ```\n"
    )
    assert extract_code_blocks(text) == [
        "indented code\n\tkeeps tab",
        "with ``` inside",
        "let a = 1;\n  deeper",
        "quoted code",
    ]


def test_copy_anchors_number_blocks_in_order_and_qt_shows_code_verbatim(qapp: object) -> None:
    text = "\n\ntext\n\n".join(fenced(code, "python") for code in CODE_SAMPLES)
    html = render_markdown(text)
    hrefs = assert_inert(html).hrefs()
    assert hrefs == [f"copy-code:{n}" for n in range(len(CODE_SAMPLES))]
    doc = load(html, qapp)
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == len(CODE_SAMPLES)
    for table, code in zip(tables, CODE_SAMPLES, strict=True):
        assert _cell_text(table, 0, 1) == "Copy"
        assert _cell_text(table, 1, 0) == code, "code not shown verbatim"


def test_code_lines_do_not_wrap_in_qt(qapp: object) -> None:
    long_line = "x = " + " + ".join(f"value_{n}" for n in range(60))
    doc = load(render_markdown(fenced(long_line, "python")), qapp)
    doc.setTextWidth(300)
    doc.size()  # lay out
    block = _block_containing(doc, "value_59")
    assert block.blockFormat().nonBreakableLines()
    assert block.layout().lineCount() == 1
    assert doc.idealWidth() > 300  # Qt widens the document; the view scrolls


def test_code_lines_wrap_when_asked_and_keep_their_text(qapp: object) -> None:
    long_line = "x = " + " + ".join(f"value_{n}" for n in range(60))
    doc = load(render_markdown(fenced(long_line, "python"), wrap_code=True), qapp)
    doc.setTextWidth(300)
    doc.size()  # lay out
    block = _block_containing(doc, "value_59")
    assert block.layout().lineCount() > 1
    assert block.text() == long_line


def _block_containing(doc: QTextDocument, needle: str) -> QTextBlock:
    block = doc.begin()
    while block.isValid():
        if needle in block.text():
            return block
        block = block.next()
    raise AssertionError(f"{needle!r} not in document")


def test_tables_render_as_qt_tables_with_alignment(qapp: object) -> None:
    text = (
        "| Name | 数量 | Price |\n|:-----|:----:|------:|\n| tea | 二 | 3.50 |\n| 咖啡 | 1 | 12 |"
    )
    doc = load(render_markdown(text), qapp)
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 1
    table = tables[0]
    assert (table.rows(), table.columns()) == (3, 3)
    cells = [[_cell_text(table, r, c) for c in range(3)] for r in range(3)]
    assert cells == [["Name", "数量", "Price"], ["tea", "二", "3.50"], ["咖啡", "1", "12"]]
    from PySide6.QtCore import Qt

    alignment = table.cellAt(1, 2).firstCursorPosition().blockFormat().alignment()
    assert alignment & Qt.AlignmentFlag.AlignRight
    alignment = table.cellAt(1, 1).firstCursorPosition().blockFormat().alignment()
    assert alignment & Qt.AlignmentFlag.AlignHCenter


def _cell_text(table: QTextTable, row: int, column: int) -> str:
    cell = table.cellAt(row, column)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), cursor.MoveMode.KeepAnchor)
    return cursor.selectedText().replace("\u2029", "\n")  # Qt's paragraph separator


STREAM = "Here is the fix:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nDone."


def test_unclosed_fence_renders_as_code_so_far(qapp: object) -> None:
    partial = "Here is the fix:\n\n```python\ndef add(a, b):\n    ret"
    html = render_markdown(partial, streaming=True)
    assert assert_inert(html).hrefs() == ["copy-code:0"]
    assert extract_code_blocks(partial) == ["def add(a, b):\n    ret"]
    plain = load(html, qapp).toPlainText()
    assert "def add(a, b):\n    ret" in plain and "python" in plain


def test_streaming_prefixes_only_ever_grow_the_last_block() -> None:
    # Every prefix renders the intro identically, and the code block, once opened, stays a
    # code block: the view never sees the structure jump around between frames.
    start = STREAM.index("```python\n") + len("```python\n")
    end = STREAM.index("```\n\nDone")
    intro = render_markdown("Here is the fix:")
    for cut in range(start, end + 2):
        html = render_markdown(STREAM[:cut], streaming=True)
        assert html.startswith(intro)
        assert html.count('href="copy-code:0"') == 1
        assert "``</pre>" not in html.replace("\n", "")  # a half-typed closing fence is hidden


def test_dark_and_light_differ() -> None:
    text = "Some `code` and [a link](https://x.y)\n\n```python\nx = 1\n```"
    light, dark = render_markdown(text), render_markdown(text, dark=True)
    assert light != dark
    assert "#f6f8fa" in light and "#0d1117" in dark
    assert document_css(False) != document_css(True)


def test_document_loads_in_qt_with_all_text(qapp: object) -> None:
    text = (
        "# 标题 Heading\n\nSome *emphasis*, **strong**, ~~gone~~ and `inline()`.\n\n"
        "1. first\n   - nested 嵌套\n2. second\n\n> quoted 引用\n\n---\n\nend 完"
    )
    doc = load(render_markdown(text), qapp)
    doc.setDefaultStyleSheet(document_css(True))
    plain = doc.toPlainText()
    for piece in ["标题 Heading", "emphasis", "strong", "gone", "inline()", "first", "nested 嵌套"]:
        assert piece in plain
    assert "quoted 引用" in plain and "end 完" in plain
    assert "*" not in plain and "#" not in plain


def test_cjk_is_preserved_without_entities_or_spaces(qapp: object) -> None:
    text = "第一行中文\n第二行：日本語、한국어 and emoji 👩‍💻"
    html = render_markdown(text)
    assert "第一行中文" in html and "👩‍💻" in html and "&#" not in html
    plain = load(html, qapp).toPlainText()
    # A single newline is a line break, not a space inserted between Chinese sentences.
    assert "第一行中文 第二行" not in plain
    assert "第一行中文" in plain and "第二行：日本語、한국어 and emoji 👩‍💻" in plain


def test_fence_language_selects_highlighting_and_unknown_is_plain() -> None:
    assert "<span" in render_markdown(fenced("def f(): pass", "python"))
    assert "<span" not in render_markdown(fenced("def f(): pass", "no-such-language"))
    assert "<span" not in render_markdown(fenced("def f(): pass", "pyth"))  # still streaming in
    assert "<span" not in render_markdown(fenced("def f(): pass"))
    assert "<span" in render_markdown(fenced("#!/usr/bin/env python3\nimport os"))


def test_finished_messages_are_cached_streaming_ones_are_not() -> None:
    text = "cache **me** 缓存"
    assert render_markdown(text) is render_markdown(text)
    assert render_markdown(text, streaming=True) == render_markdown(text)
    assert render_markdown(text, streaming=True) is not render_markdown(text, streaming=True)


def test_bad_input_gets_typed_errors_naming_the_problem() -> None:
    with pytest.raises(TypeError, match="must be str, got NoneType"):
        render_markdown(None)  # type: ignore[arg-type]
