"""CJK emphasis (issue 11, item 3): ``**`` and ``*`` next to full-width punctuation render as a
Chinese reader expects, and ASCII Markdown still parses exactly as CommonMark."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from app.markdown.cjk import is_cjk
from app.markdown.render import _MD, render_markdown

COMMONMARK = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
    ["table", "strikethrough"]
)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("**症状：**文本说明", "<strong>症状：</strong>文本说明"),  # full-width colon inside
        ("请看**“引号”**里面", "请看<strong>“引号”</strong>里面"),  # curly quotes inside
        ("这是**（括号）**内容", "这是<strong>（括号）</strong>内容"),  # full-width brackets
        ("**「重要」**です", "<strong>「重要」</strong>です"),  # corner brackets, Japanese
        ("注意*《书名》*很好", "注意<em>《书名》</em>很好"),  # single * and book-title marks
        ("结果是**100%**。", "结果是<strong>100%</strong>。"),  # ASCII punct inside, 。 after
        ("**重要。**然后", "<strong>重要。</strong>然后"),
        ("中文*强调*中文", "中文<em>强调</em>中文"),
        ("价格**$5**元", "价格<strong>$5</strong>元"),
    ],
)
def test_emphasis_next_to_full_width_punctuation(source: str, expected: str) -> None:
    assert _MD.renderInline(source) == expected
    assert "*" not in render_markdown(source)  # through the whole renderer too


@pytest.mark.parametrize(
    "source",
    [
        '**foo"**bar',  # CommonMark example: not emphasis
        'a*"foo"*',  # not emphasis
        "*(*foo*)*",
        "foo*bar*",
        "_foo_bar",  # intraword underscore stays literal
        "中_文_字",  # also between CJK: "_" keeps the CommonMark rule (identifiers)
        "**😀**a",  # emoji are not CJK text
        "a ** b **",
        "*a **b** c*",
    ],
)
def test_cases_without_cjk_around_the_delimiter_are_commonmark(source: str) -> None:
    assert _MD.renderInline(source) == COMMONMARK.renderInline(source)


def _shape(md: MarkdownIt, source: str) -> list[tuple[str, str]]:
    """Every token, inline children included, as (type, content)."""
    shape = []
    for token in md.parse(source):
        shape.append((token.type, token.content))
        shape += [(child.type, child.content) for child in token.children or []]
    return shape


# No "$", "\\" or ":" in the alphabet: math and bare URLs are other plugins' syntax.
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='*_ab1 .,!?"()[]~`#>-|\n', max_size=30))
def test_ascii_markdown_parses_exactly_as_commonmark(source: str) -> None:
    assert _shape(_MD, source) == _shape(COMMONMARK, source)


def test_what_counts_as_cjk() -> None:
    assert all(is_cjk(c) for c in "中：（）「」。、ｶ한")
    assert not any(is_cjk(c) for c in "a1!é“”😀 ")  # curly quotes are ambiguous-width
