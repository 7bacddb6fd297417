"""Bare http(s) URLs in model output become links (a markdown-it core rule).

Owns: finding ``http://`` and ``https://`` URLs in plain text tokens and wrapping them in link
tokens, which the renderer then treats like any other link (scheme allow-list, click-only).
Does not own: rendering, other schemes, or ``www.`` addresses without a scheme. Written here
rather than pulling in linkify-it-py because only these two schemes are ever made clickable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

# ASCII URL characters only, so a URL written flush against Chinese text ends where it should.
_URL = re.compile(r"https?://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+", re.IGNORECASE)
_TRAILING = ".,;:!?'\"*_~"


def _trim(url: str) -> str:
    """Drop sentence punctuation after a URL, and a ``)`` that closes an outer parenthesis.

    One pass from the end with running counts: a URL followed by 100,000 ``)`` once cost
    a recount of the whole URL per dropped character (quadratic: seconds, then minutes).
    """
    opens, closes = url.count("("), url.count(")")
    end = len(url)
    while end:
        last = url[end - 1]
        if last == ")" and closes > opens:
            closes -= 1
        elif last not in _TRAILING:
            break
        end -= 1
    return url[:end]


def _matches(text: str) -> Iterator[tuple[int, int]]:
    for match in _URL.finditer(text):
        url = _trim(match.group())
        if url.partition("://")[2]:  # something after the scheme
            yield match.start(), match.start() + len(url)


def _split(md: MarkdownIt, token: Token) -> list[Token]:
    """``token`` (type text) as text / link_open / text / link_close ... pieces."""
    pieces: list[Token] = []
    position = 0
    for start, end in _matches(token.content):
        if start > position:
            pieces.append(_text(token.content[position:start], token.level))
        url = token.content[start:end]
        link_open = Token("link_open", "a", 1, level=token.level, markup="linkify")
        link_open.attrSet("href", md.normalizeLink(url))
        pieces += [link_open, _text(url, token.level + 1)]
        pieces.append(Token("link_close", "a", -1, level=token.level, markup="linkify"))
        position = end
    if position < len(token.content):
        pieces.append(_text(token.content[position:], token.level))
    return pieces


def _text(content: str, level: int) -> Token:
    return Token("text", "", 0, content=content, level=level)


def _linkify(md: MarkdownIt, state: StateCore) -> None:
    for block in state.tokens:
        if block.type != "inline" or not block.children or "://" not in block.content:
            continue
        children: list[Token] = []
        inside_link = 0
        for child in block.children:
            inside_link += {"link_open": 1, "link_close": -1}.get(child.type, 0)
            if child.type == "text" and not inside_link and "://" in child.content:
                children += _split(md, child)
            else:
                children.append(child)
        block.children = children


def linkify_plugin(md: MarkdownIt) -> None:
    """Install the rule: ``md.use(linkify_plugin)``."""
    md.core.ruler.push("hearth_linkify", lambda state: _linkify(md, state))
