"""Math (issue 11, item 6): formulas typeset offline into images the chat document shows, the
usual dollar rules keep prices as text, a formula that does not parse stays text, and the
source is what the message's Copy copies."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from app.listmodels.messages import MessageItem, MessageListModel
from app.markdown.math import (
    MAX_FORMULA_CHARS,
    MAX_FORMULAS,
    formula_svg,
    math_url,
    parse_math_url,
)
from app.markdown.render import StreamingRenderer, render_markdown
from app.views.chat.chat_view import ChatView
from app.views.chat.math_images import math_image
from tests.app.test_markdown_render import ALLOWED_TAGS, TagCollector


def formulas(html: str) -> list[tuple[str, bool]]:
    """(tex, display) of every formula image in ``html``."""
    found = []
    for tag, attrs in TagCollector(html).tags:
        if tag == "img":
            parsed = parse_math_url(str(attrs["src"]))
            assert parsed is not None
            found.append((parsed[0], parsed[1]))
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Euler: $e^{i\\pi}+1=0$.", [("e^{i\\pi}+1=0", False)]),
        ("inline \\(x^2\\) here", [("x^2", False)]),
        ("$$\\int_0^1 x\\,dx$$", [("\\int_0^1 x\\,dx", True)]),
        ("\\[\\frac{a}{b}\\]", [("\\frac{a}{b}", True)]),
        ("$$\n\\sum_{i=1}^n i\n$$", [("\n\\sum_{i=1}^n i\n", True)]),
        ("cost $x$ and $y_1$", [("x", False), ("y_1", False)]),
        ("$a_1 * b_2$ *c*", [("a_1 * b_2", False)]),  # no emphasis inside a formula
    ],
)
def test_formulas_become_images(source: str, expected: list[tuple[str, bool]]) -> None:
    html = render_markdown(source)
    assert formulas(html) == expected
    assert {tag for tag, _ in TagCollector(html).tags} <= ALLOWED_TAGS | {"img"}


@pytest.mark.parametrize(
    "source",
    [
        "$5 and $6",  # closing $ after a space
        "$ x$",  # space after the opening $
        "$x $",  # space before the closing $
        "$x$1",  # closing $ followed by a digit
        "\\$x$",  # an escaped dollar
        "`$x$`",  # code stays code
        "$$",
        "$ $",
    ],
)
def test_the_dollar_rules_keep_prices_and_code_as_text(source: str) -> None:
    assert formulas(render_markdown(source)) == []


@pytest.mark.parametrize(
    "tex", ["\\frac{a}", "a^", "\\notacommand{x}", "\\left( x", "x}", "中文", "\\sqrt{"]
)
def test_a_formula_that_does_not_parse_stays_as_its_source(tex: str) -> None:
    assert formula_svg(tex, False, "#000000") is None
    html = render_markdown(f"see ${tex}$ here")
    assert formulas(html) == []
    assert "$" in html and "see" in html


def test_a_display_formula_alone_in_a_paragraph_is_centred() -> None:
    assert '<p align="center"><img' in render_markdown("$$x^2$$")
    assert '<p align="center">' not in render_markdown("text $$x^2$$ more")


def test_formula_colour_follows_the_theme() -> None:
    light = parse_math_url(str(TagCollector(render_markdown("$x$")).tags[1][1]["src"]))
    dark = parse_math_url(str(TagCollector(render_markdown("$x$", dark=True)).tags[1][1]["src"]))
    assert light is not None and dark is not None and light[2] != dark[2]
    svg = formula_svg("x", False, dark[2])
    assert svg is not None and dark[2].lower() in svg.svg.lower()


def test_unclosed_openers_cost_a_bounded_search() -> None:
    # Each opener looks ahead at most MAX_FORMULA_CHARS: many unclosed ones stay linear.
    text = "\\(a " * 20_000
    assert formulas(render_markdown(text)) == []
    long = "$" + "x" * (MAX_FORMULA_CHARS + 10) + "$"
    assert formulas(render_markdown(long)) == []


def test_a_message_typesets_at_most_max_formulas_also_while_streaming() -> None:
    text = "".join(f"$x_{{{i}}}$\n\n" for i in range(MAX_FORMULAS + 20))
    html = render_markdown(text)
    assert len(formulas(html)) == MAX_FORMULAS
    assert f"$x_{{{MAX_FORMULAS + 5}}}$" in html  # the rest stay source text
    renderer = StreamingRenderer()
    for end in range(0, len(text), 400):
        renderer.render(text[:end])
    assert renderer.render(text) == html


def test_math_urls_round_trip_and_reject_others() -> None:
    url = math_url("\\frac{1}{2} + 中", True, "#1f2328")
    assert parse_math_url(url) == ("\\frac{1}{2} + 中", True, "#1f2328")
    for other in ("https://x/y.png", "hearth-math:0/zzzzzz/eA", "hearth-math:2/000000/eA"):
        assert parse_math_url(other) is None


def test_the_image_has_ink_and_the_size_the_html_says(qapp: Any) -> None:
    html = render_markdown("$\\frac{a}{b}$")
    attrs = TagCollector(html).tags[1][1]
    image = math_image(str(attrs["src"]), 2.0)
    assert image is not None and not image.isNull()
    assert image.devicePixelRatio() == 2.0
    assert abs(image.width() / 2 - int(str(attrs["width"]))) <= 1
    assert any(
        image.pixelColor(x, y).alpha() for x in range(image.width()) for y in range(image.height())
    )


def test_the_chat_shows_the_formula_and_copy_gives_the_source(qtbot: Any) -> None:
    source = "The area is $\\pi r^2$."
    model = MessageListModel()
    view = ChatView(model)
    qtbot.addWidget(view)
    view.resize(800, 400)
    view.show()
    item = MessageItem.of("m", "assistant", source, finish_reason="stop")
    model.set_items([item])
    QApplication.processEvents()
    doc = view.message_delegate.document(item)
    # One object replacement character: the formula is an image in the laid-out document.
    assert doc.toPlainText().count("\ufffc") == 1
    assert doc.size().height() > 0
    actions: list[tuple[str, str]] = []
    view.message_delegate.sig_action.connect(lambda a, i: actions.append((a, i)))
    assert model.item(0).record.content == source  # what Copy puts on the clipboard
