"""markdown-it render rules that turn tokens into the inline-styled HTML Qt's rich text shows.

Owns: links and images under the scheme allow-list, inline code, tables, block quotes, and code
blocks with their header, ``copy-code:N`` anchor and (capped) highlighted body. Does not own
the parser set-up, caching or streaming (``render.py``), nor the display caps themselves
(``limits.py``). Every function has markdown-it's signature ``(self, tokens, idx, options,
env)``; ``env`` carries the theme, the translated labels and per-render state.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from markdown_it.token import Token

from app.markdown.highlight import (
    Theme,
    fence_language,
    highlight_code,
    highlight_growing_code,
)
from app.markdown.limits import LINE_MARK, cap_code_lines, note_html

_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_IMAGE_SCHEMES = frozenset({"http", "https"})
_ALIGN = re.compile(r"text-align:\s*(left|center|right)")


def _theme(env: dict[str, Any]) -> Theme:
    theme: Theme = env["theme"]
    return theme


def _allowed_href(url: str, schemes: frozenset[str]) -> str | None:
    """The escaped URL when its scheme is allowed, else ``None`` (relative links too)."""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return html.escape(url, quote=True) if scheme in schemes else None


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    href = _allowed_href(str(tokens[idx].attrGet("href") or ""), _LINK_SCHEMES)
    env["links"].append(href is not None)
    if href is None:
        return ""
    return f'<a href="{href}" style="color:{_theme(env).link}">'


def _link_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    opened = env["links"].pop() if env["links"] else False
    return "</a>" if opened else ""


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = html.escape(f"[{env['labels'].image}: {alt}]", quote=False)
    href = _allowed_href(str(token.attrGet("src") or ""), _IMAGE_SCHEMES)
    # Inside a link the outer anchor already carries the click; Qt cannot nest anchors.
    if href is None or any(env["links"]):
        return label
    return f'<a href="{href}" style="color:{_theme(env).link}">{label}</a>'


def _code_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    code = html.escape(tokens[idx].content, quote=False)
    return f'<code style="background-color:{_theme(env).inline_code_bg}">{code}</code>'


def _raw_html(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    # Unreachable with html=False; kept so raw HTML stays text even if that option changes.
    return html.escape(tokens[idx].content, quote=False)


def _table_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    theme = _theme(env)
    return (
        '<table border="1" cellspacing="0" cellpadding="4" '
        # Solid: Qt's default table border style is "outset", which draws the top and left
        # edges in a near-white shade.
        f'style="border-collapse:collapse; border-style:solid; border-color:{theme.border}; '
        'margin-top:4px; margin-bottom:4px">\n'
    )


def _cell_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    # Qt honours the align attribute on cells; markdown-it writes a style instead.
    token = tokens[idx]
    match = _ALIGN.search(str(token.attrGet("style") or ""))
    align = f' align="{match.group(1)}"' if match else ""
    shade = f' bgcolor="{_theme(env).code_header_bg}"' if token.tag == "th" else ""
    return f"<{token.tag}{align}{shade}>"


def _blockquote_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    return f'<blockquote style="color:{_theme(env).quote_fg}">\n'


def display_code(token: Token) -> str:
    """The code shown for a block: its raw code minus a half-typed closing fence.

    While a reply streams, a last line of one or two backticks in an unclosed block is the
    start of its closing fence; hiding it keeps the block from growing a stray line that
    vanishes a frame later.
    """
    code = raw_code(token)
    if token.type != "fence" or token.content.endswith("\n"):
        return code
    head, _, last = code.rpartition("\n")
    marker = token.markup[:1]
    if last.strip() and set(last.strip()) == {marker} and len(last.strip()) < len(token.markup):
        return head
    return code


def raw_code(token: Token) -> str:
    """The code of a fenced/indented block exactly as written, without the final newline."""
    content = token.content
    return content[:-1] if content.endswith("\n") else content


def _code_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    token = tokens[idx]
    theme = _theme(env)
    index = env["code_index"]
    env["code_index"] = index + 1
    language = fence_language(token.info) if token.type == "fence" else ""
    code, note = cap_code_lines(display_code(token), env["labels"].lines_hidden)
    highlight = highlight_growing_code if env.get("growing") else highlight_code
    # A shortened line's sentinel would be a lexer error (a red box): highlight around it.
    cut = note_html(env["labels"].line_shortened, theme.quote_fg)
    body = cut.join(highlight(piece, language, theme.dark) for piece in code.split(LINE_MARK))
    if note:
        body += "\n" + note_html(note, theme.quote_fg)
    if body.endswith("\n"):
        body += "\n"  # Qt also drops one newline right before </pre>
    copy = html.escape(env["labels"].copy, quote=False)
    wrap = "; white-space:pre-wrap" if env["wrap_code"] else ""
    return (
        '<table width="100%" border="0" cellspacing="0" cellpadding="6" '
        f'bgcolor="{theme.code_bg}" style="margin-top:6px; margin-bottom:6px">\n'
        f'<tr><td bgcolor="{theme.code_header_bg}" style="color:{theme.code_header_fg}">'
        f"{html.escape(language, quote=False)}</td>"
        f'<td bgcolor="{theme.code_header_bg}" align="right">'
        f'<a href="copy-code:{index}" style="color:{theme.link}">{copy}</a></td></tr>\n'
        # Qt, like HTML, drops one newline right after <pre>: give it one to drop so a
        # leading blank line of code survives.
        f'<tr><td colspan="2"><pre style="color:{theme.code_fg}; margin:0{wrap}">\n{body}</pre>'
        "</td></tr>\n</table>\n"
    )


RULES = {
    "link_open": _link_open,
    "link_close": _link_close,
    "image": _image,
    "code_inline": _code_inline,
    "html_block": _raw_html,
    "html_inline": _raw_html,
    "table_open": _table_open,
    "th_open": _cell_open,
    "td_open": _cell_open,
    "blockquote_open": _blockquote_open,
    "fence": _code_block,
    "code_block": _code_block,
}
