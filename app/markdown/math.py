"""LaTeX math in replies: ``$…$``, ``\\(…\\)`` inline and ``$$…$$``, ``\\[…\\]`` display.

Owns: finding formulas (one markdown-it inline rule), typesetting them offline to SVG with
ziamath (pure Python, its own STIX Two Math font: no LaTeX install, no network), and the
``<img src="hearth-math:…">`` the renderer writes for each. The view turns such a URL back
into pixels (``formula_svg`` is cached, so that costs nothing twice). Does not own Qt images
or painting (``app.views.chat.math_images``).

Why ziamath: matplotlib's mathtext needs matplotlib (~40 MB with its dependencies) and
knows a smaller subset (no matrices, no ``cases``); ziamath is ~1.3 MB, renders a formula in
2-10 ms here, and its SVG scales crisply to any screen.

Rules (pandoc's, so prices stay text): an opening ``$`` is followed by a non-space, a closing
``$`` follows a non-space and is not followed by a digit, the closing one is the next
unescaped ``$`` (``$5 and $6`` is text). Searches stop after ``MAX_FORMULA_CHARS`` so that
many unclosed openers cost linear time, and at most ``MAX_FORMULAS`` per message are typeset
(a hostile reply of thousands would cost seconds). A formula that does not typeset (an unknown
command, a missing argument, CJK text) stays as its source text. The message's Copy copies the
stored Markdown, so a formula's LaTeX source is what is copied.
"""

from __future__ import annotations

import base64
import functools
import html
import re
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from app.markdown.cjk import is_cjk

MAX_FORMULA_CHARS = 2_000
MAX_FORMULAS = 300  # per message: typesetting costs 2-10 ms each; the rest stay source text
MATH_SCHEME = "hearth-math"
FONT_PX = 16  # a little above body text: sub- and superscripts stay legible
_BRACKETS = {"\\(": ("\\)", False), "\\[": ("\\]", True)}
# MathML elements and how many children a well-formed one has.
_ARITY = {"mfrac": 2, "mroot": 2, "msub": 2, "msup": 2, "munder": 2, "mover": 2}
_ARITY |= {"msubsup": 3, "munderover": 3}


@dataclass(frozen=True)
class FormulaSvg:
    """One typeset formula: SVG text and its size in CSS pixels at ``FONT_PX``."""

    svg: str
    width: float
    height: float


# --- parsing -------------------------------------------------------------------------------


def _closing_dollar(src: str, start: int, end: int, double: bool) -> int:
    """Index of the closing ``$``/``$$`` for content starting at ``start``, or -1."""
    marker = "$$" if double else "$"
    found = src.find(marker, start, end)
    while found > start and src[found - 1] == "\\":  # an escaped \$ inside the formula
        found = src.find(marker, found + 1, end)
    if found <= start:
        return -1
    if not double and (src[found - 1].isspace() or src[found + 1 : found + 2].isdigit()):
        return -1
    return found


def _match(src: str, pos: int, limit: int) -> tuple[str, bool, int] | None:
    """(tex, display, end) for a formula starting at ``pos``, or None."""
    bound = min(limit, pos + MAX_FORMULA_CHARS)
    opener = src[pos : pos + 2]
    if opener in _BRACKETS:
        closer, display = _BRACKETS[opener]
        found = src.find(closer, pos + 2, bound)
        return (src[pos + 2 : found], display, found + 2) if found > pos + 2 else None
    if src[pos] != "$":
        return None
    double = opener == "$$"
    start = pos + (2 if double else 1)
    if start >= limit or (not double and src[start].isspace()):
        return None  # "$ 5": a space after a single opening $ is prose
    found = _closing_dollar(src, start, bound, double)
    if found < 0:
        return None
    return src[start:found], double, found + (2 if double else 1)


def _math_rule(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] not in "$\\":
        return False
    found = _match(state.src, state.pos, state.posMax)
    if found is None or not found[0].strip():
        return False
    tex, display, end = found
    if not silent:
        token = state.push("math_display" if display else "math_inline", "", 0)
        token.content = tex
        token.markup = state.src[state.pos : end]  # the source, shown if it fails to typeset
    state.pos = end
    return True


def _centre_display_paragraphs(state: StateCore) -> None:
    """A paragraph holding only display math is centred, as LaTeX shows it."""
    tokens = state.tokens
    for i, token in enumerate(tokens[1:-1], start=1):
        if token.type != "inline" or tokens[i - 1].type != "paragraph_open":
            continue
        kinds = {c.type for c in token.children or []} - {"softbreak", "hardbreak"}
        if kinds == {"math_display"}:
            tokens[i - 1].attrSet("align", "center")


# --- typesetting ---------------------------------------------------------------------------


def _well_formed(root: ElementTree.Element) -> bool:
    """False for what latex2mathml passes through instead of failing: unknown commands,
    stray braces, fractions and scripts missing an argument."""
    for element in root.iter():
        tag = element.tag.rpartition("}")[2]
        text = (element.text or "").strip()
        if tag in ("mi", "mo", "mn") and (text.startswith("\\") or text in ("{", "}")):
            return False
        if tag in _ARITY and len(element) != _ARITY[tag]:
            return False
    return True


@functools.lru_cache(maxsize=1024)
def formula_svg(tex: str, display: bool, colour: str) -> FormulaSvg | None:
    """The typeset formula, or None when ``tex`` does not parse. Pure and cached: safe to
    call from any thread (ziamath keeps no per-call state)."""
    if any(is_cjk(char) for char in tex):
        return None  # the math font has no CJK glyphs: "$中文$" is not a formula
    try:
        import ziamath
        from ziamath.tex import tex2mml

        ziamath.config.svg2 = False  # plain paths: Qt's SVG Tiny renderer has no <symbol>
        root = ElementTree.fromstring(tex2mml(tex, inline=not display))
        if not _well_formed(root):
            return None
        root.attrib["mathcolor"] = colour
        math = ziamath.Math(root, size=FONT_PX)
        svg = math.svg()
        width, height = math.getsize()
    except Exception:  # latex2mathml and ziamath raise many types on bad input
        return None
    return FormulaSvg(svg, float(width), float(height))


def math_url(tex: str, display: bool, colour: str) -> str:
    """The image URL for a formula; ``parse_math_url`` reverses it."""
    payload = base64.urlsafe_b64encode(tex.encode()).decode().rstrip("=")
    return f"{MATH_SCHEME}:{int(display)}/{colour.lstrip('#')}/{payload}"


def parse_math_url(url: str) -> tuple[str, bool, str] | None:
    """(tex, display, colour) from ``math_url``'s output, or None for anything else."""
    match = re.fullmatch(MATH_SCHEME + r":([01])/([0-9a-fA-F]{6})/([A-Za-z0-9_-]*)", url)
    if match is None:
        return None
    payload = match.group(3)
    try:
        tex = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except ValueError:
        return None
    return tex, match.group(1) == "1", "#" + match.group(2)


# --- rendering -----------------------------------------------------------------------------


def _render_math(self: Any, tokens: list[Token], idx: int, options: Any, env: dict) -> str:
    token = tokens[idx]
    display = token.type == "math_display"
    colour = env["theme"].code_fg
    env["formulas"] = env.get("formulas", 0) + 1
    if env["formulas"] > MAX_FORMULAS:
        return html.escape(token.markup, quote=False)
    typeset = formula_svg(token.content, display, colour)
    if typeset is None:
        return html.escape(token.markup, quote=False)
    src = math_url(token.content, display, colour)
    # Middle: Qt can align an inline image to the text's middle, not to its baseline.
    return (
        f'<img src="{src}" width="{round(typeset.width)}" height="{round(typeset.height)}" '
        'style="vertical-align: middle">'
    )


def math_plugin(md: MarkdownIt) -> None:
    """Install the rules: ``md.use(math_plugin)``."""
    md.inline.ruler.before("escape", "hearth_math", _math_rule)
    md.core.ruler.push("hearth_math_centre", _centre_display_paragraphs)
    md.add_render_rule("math_inline", _render_math)
    md.add_render_rule("math_display", _render_math)
