"""Syntax highlighting of code blocks for Qt's rich-text engine, plus the colour themes.

Owns: choosing a pygments lexer for a fence's language, turning code into inline-styled
``<span>`` HTML that QTextDocument understands (it ignores CSS classes from pygments'
stylesheet, so styles are inlined), and the light/dark colour palettes the Markdown renderer
uses. Does not own: Markdown parsing, block layout or copy actions (``render.py``).

Language guessing: pygments' ``guess_lexer`` was measured on this machine at 2-20 ms per block
(670 ms on its first call) and guessed Python as "Tera Term macro" and JavaScript as
"GDScript", so blocks without a language are only highlighted when a shebang line names the
interpreter; everything else stays plain text.
"""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_all_lexers, get_lexer_by_name
from pygments.util import ClassNotFound

from app.markdown.limits import MAX_HIGHLIGHT_CHARS

# Shebang interpreters worth recognising, mapped to pygments lexer aliases.
_SHEBANG_ALIASES = {
    "python": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "node": "javascript",
    "ruby": "ruby",
    "perl": "perl",
}


@dataclass(frozen=True)
class Theme:
    """Colours for one appearance; every value is a ``#RRGGBB`` Qt understands."""

    dark: bool
    pygments_style: str
    code_bg: str
    code_fg: str
    code_header_bg: str
    code_header_fg: str
    inline_code_bg: str
    link: str
    border: str
    quote_fg: str


LIGHT = Theme(
    dark=False,
    pygments_style="default",
    code_bg="#f6f8fa",
    code_fg="#1f2328",
    code_header_bg="#e8ebef",
    code_header_fg="#57606a",
    inline_code_bg="#eff1f3",
    link="#0969da",
    border="#b6bec6",
    quote_fg="#57606a",
)

DARK = Theme(
    dark=True,
    pygments_style="github-dark",
    code_bg="#0d1117",
    code_fg="#e6edf3",
    code_header_bg="#1f242c",
    code_header_fg="#9198a1",
    inline_code_bg="#2d333b",
    link="#4493f8",
    border="#3d444d",
    quote_fg="#9198a1",
)


def theme_for(dark: bool) -> Theme:
    """The palette for the light or dark appearance."""
    return DARK if dark else LIGHT


def fence_language(info: str) -> str:
    """The language word of a fence info string (```` ```python title="x" ```` -> ``python``)."""
    words = info.strip().split()
    return words[0] if words else ""


@functools.cache
def _known_aliases() -> frozenset[str]:
    # pygments' built-in table, read without importing any lexer module (~0.5 ms).
    lexers = get_all_lexers(plugins=False)
    return frozenset(alias for _, aliases, _, _ in lexers for alias in aliases)


@functools.lru_cache(maxsize=128)
def _lexer_for(language: str) -> Lexer | None:
    # Unknown names (including "pyth" while a fence's first line streams in) stop here: pygments
    # would otherwise scan installed plugins, ~300 ms the first time. Lexers are stateless
    # between calls, so one instance per language is shared.
    if language not in _known_aliases():
        return None
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


COMMON_LANGUAGES = ("python", "javascript", "typescript", "bash", "json", "c", "cpp", "java")


def warm_up(languages: tuple[str, ...] = COMMON_LANGUAGES) -> None:
    """Import the lexers for ``languages`` now (each first use costs 100-200 ms here).

    Call once when the app is idle after start-up, so the first code block of a streaming
    reply does not stall the GUI thread while pygments imports its lexer.
    """
    for language in languages:
        _lexer_for(language)


def _shebang_language(code: str) -> str:
    """``python`` for ``#!/usr/bin/env python3`` and the like; ``""`` when there is none."""
    if not code.startswith("#!"):
        return ""
    words = code[2:].split("\n", 1)[0].split()
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program == "env" and len(words) > 1:
        program = words[1]
    return _SHEBANG_ALIASES.get(program, "")


@functools.lru_cache(maxsize=8)
def _formatter(style: str) -> HtmlFormatter:
    # noclasses: Qt ignores pygments' class stylesheet; nowrap: the caller owns the <pre>.
    return HtmlFormatter(nowrap=True, noclasses=True, style=style)


@functools.lru_cache(maxsize=512)
def highlight_code(code: str, language: str, dark: bool) -> str:
    """HTML (escaped text and styled spans, no ``<pre>``) for ``code`` in ``language``.

    Cached because a streaming message re-renders ~30 times a second while its finished code
    blocks do not change. Unknown or empty languages, and code longer than
    ``MAX_HIGHLIGHT_CHARS`` (its cost would freeze the GUI), fall back to escaped plain text.
    """
    if not code:
        return ""
    if len(code) > MAX_HIGHLIGHT_CHARS:
        return html.escape(code, quote=False)  # pygments costs ~10 ms per KiB here
    lexer = _lexer_for(language.lower()) if language else None
    if lexer is None and not language:
        guessed = _shebang_language(code)
        lexer = _lexer_for(guessed) if guessed else None
    if lexer is None:
        return html.escape(code, quote=False)
    result = highlight(code, lexer, _formatter(theme_for(dark).pygments_style))
    # The formatter ends every line with a newline; an extra one shows as a blank last line.
    if result.endswith("\n") and not code.endswith("\n"):
        result = result[:-1]
    return result


# Lines per independently highlighted chunk of a block that is still streaming.
_CHUNK_LINES = 8


def highlight_growing_code(code: str, language: str, dark: bool) -> str:
    """Like ``highlight_code`` for a block still being written, at a cost that stays flat.

    Whole-block highlighting costs ~10 ms per KiB here, so a long block re-highlighted 30
    times a second would stall the GUI. Complete 8-line chunks are highlighted separately
    (and cached); only the last, growing chunk is redone each frame. A construct spanning a
    chunk boundary (a long docstring) may be coloured wrongly until the message finishes
    and is rendered whole.
    """
    lines = code.split("\n")
    full_chunks = (len(lines) - 1) // _CHUNK_LINES
    if full_chunks == 0:
        return highlight_code(code, language, dark)
    parts = []
    for chunk in range(full_chunks):
        chunk_lines = lines[chunk * _CHUNK_LINES : (chunk + 1) * _CHUNK_LINES]
        parts.append(highlight_code("\n".join(chunk_lines) + "\n", language, dark))
    parts.append(highlight_code("\n".join(lines[full_chunks * _CHUNK_LINES :]), language, dark))
    return "".join(parts)
