"""Markdown -> safe, inert HTML for Qt's rich-text engine (QTextDocument / QTextBrowser).

Owns: parsing model output with markdown-it-py (CommonMark + tables + strikethrough, raw HTML
off so ``<script>`` and friends arrive as visible text), rendering it with inline styles that
Qt's HTML subset understands, code-block headers with ``copy-code:N`` anchors, the raw code of
each block for copying.
Does not own: Qt widgets, opening links (the view opens http/https/mailto on click only),
fonts (the app picks them), the HTML of each token (``html_rules.py``), syntax colours
(``highlight.py``), finding bare URLs (``linkify.py``), CJK emphasis (``cjk.py``) or the
display caps on huge replies (``limits.py``).

Safety rules: links keep an href only for http, https and mailto; images are never loaded but
shown as a "[image: alt]" text link; every attribute value is escaped; no user text reaches a
``style`` attribute.

Single newlines become line breaks (``breaks``): chat models use them as line breaks, and
CommonMark's soft break would put a space between two lines of Chinese text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from app.markdown.cjk import cjk_emphasis_plugin
from app.markdown.highlight import theme_for
from app.markdown.html_rules import RULES, raw_code
from app.markdown.limits import (
    cap_lines,
    replace_markers,
    table_rows_plugin,
    text_cut,
    text_shortened_html,
)
from app.markdown.linkify import linkify_plugin
from app.markdown.math import math_plugin

_CODE_TOKENS = frozenset({"fence", "code_block"})
# Finished messages only; each entry is one message's HTML (a few KiB to ~100 KiB).
_CACHE_SIZE = 256


@dataclass(frozen=True)
class RenderLabels:
    """User-visible words the renderer writes; the view passes translated ones (``self.tr``).

    ``rows_hidden`` and ``lines_hidden`` take the hidden count as ``{0}``.
    """

    copy: str = "Copy"
    image: str = "image"
    line_shortened: str = "… (line shortened; copy shows all)"
    text_shortened: str = "… (message shortened for display; copy shows all)"
    rows_hidden: str = "… ({0} more rows; copy shows all)"
    lines_hidden: str = "… ({0} more lines; copy shows all)"


DEFAULT_LABELS = RenderLabels()


def _build_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.use(cjk_emphasis_plugin)  # **症状：**文本 is bold, as a Chinese reader expects
    md.use(linkify_plugin)  # bare http(s) URLs: models write them without <...>
    md.use(table_rows_plugin)  # a 10,000-row table shows its first rows and a note
    md.use(math_plugin)  # $…$, \(…\), $$…$$, \[…\] typeset offline
    # Accept every URL at parse time so unsafe links still become link tokens; the render
    # rules keep the text and drop the href. (The default validator leaves the raw
    # "[text](javascript:...)" source in the output instead.)
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    for name, rule in RULES.items():
        md.add_render_rule(name, rule)
    return md


_MD = _build_parser()


# --- public API --------------------------------------------------------------------------


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"markdown text must be str, got {type(text).__name__}")
    return text


def render_markdown(
    text: str,
    *,
    dark: bool = False,
    labels: RenderLabels = DEFAULT_LABELS,
    streaming: bool = False,
    wrap_code: bool = False,
) -> str:
    """Safe, inert HTML for ``text`` (Markdown), styled for the light or dark theme.

    Code block N gets a ``copy-code:N`` anchor; ``extract_code_blocks(text)[N]`` is its code.
    Finished messages are served from an LRU cache. Pass ``streaming=True`` for the message
    that is still growing: its ~30 renders a second then skip the cache (so they do not evict
    finished messages) and re-parse only its last top-level block (``StreamingRenderer``).
    Long code lines do not wrap (the view scrolls) unless ``wrap_code``: a view that cannot
    scroll sideways (the chat delegate) should wrap them rather than clip. GUI thread only.
    """
    _check_text(text)
    if streaming:
        return _shared_streamer(dark, labels, wrap_code).render(text)
    return _render_cached(text, dark, labels, wrap_code)


def _new_env(
    dark: bool, labels: RenderLabels, wrap_code: bool, code_index: int = 0, formulas: int = 0
) -> dict[str, Any]:
    return {
        "theme": theme_for(dark),
        "labels": labels,
        "wrap_code": wrap_code,
        "code_index": code_index,
        "formulas": formulas,  # typeset so far (math.py caps them per message)
        "links": [],
    }


def _render(text: str, dark: bool, labels: RenderLabels, wrap_code: bool = False) -> str:
    env = _new_env(dark, labels, wrap_code)
    kept = text_cut(text)  # display caps: see limits.py
    rendered = replace_markers(_MD.render(cap_lines(text[:kept]), env), env)
    return rendered + text_shortened_html(env) if kept < len(text) else rendered


_render_cached = functools.lru_cache(maxsize=_CACHE_SIZE)(_render)


class StreamingRenderer:
    """Renders one message that only grows, parsing just its last top-level block per call.

    CommonMark closes a block for good once the next top-level block starts, so the HTML of
    every block before the last is frozen and reused; parsing cost stays flat however long the
    reply gets (markdown-it needs ~1 ms per 250 characters here). The output equals
    ``render_markdown`` except that code is highlighted in 8-line chunks (see
    ``highlight_growing_code``) and that a reference-style link (``[x][ref]``) whose
    definition is in another block stays text until the finished message is rendered
    normally. Any text that does not extend the previous one (regenerate, edit) starts afresh.
    """

    def __init__(
        self, *, dark: bool = False, labels: RenderLabels = DEFAULT_LABELS, wrap_code: bool = False
    ) -> None:
        self._dark = dark
        self._labels = labels
        self._wrap_code = wrap_code
        self._frozen_source = ""
        self._frozen_html = ""
        self._frozen_counts = (0, 0)  # code blocks and formulas in the frozen part
        # Set while the frozen part ends inside a top-level list: the opening token's type and
        # marker, which the next parse of the tail repeats and the renderer must skip.
        self._open_list: tuple[str, str] | None = None
        self._list_loose = False  # whether that list's frozen items were rendered loose

    def render(self, text: str) -> str:
        """The HTML of ``text``; cheap when ``text`` extends the previous call's text."""
        # markdown-it turns \r\n and \r into \n before parsing; do it first so line numbers
        # in its token maps index this string.
        text = _check_text(text).replace("\r\n", "\n").replace("\r", "\n")
        kept = text_cut(text)  # a runaway reply: show its start, the same cut every frame
        text, cut = text[:kept], kept < len(text)
        if not text.startswith(self._frozen_source):
            self._reset()
        tokens, env, tail = self._parse_tail(text)
        if tokens is None:  # the tail no longer continues the frozen list: start afresh
            self._reset()
            tokens, env, tail = self._parse_tail(text)
            assert tokens is not None
        skip = 1 if self._open_list else 0  # the repeated list opening, already in the HTML
        if skip and _list_is_loose(tokens, 0) != self._list_loose:
            if not self._list_loose:  # a blank line made the list loose: its frozen items
                self._reset()  # lack their <p>; render it whole again (once per list)
                tokens, env, tail = self._parse_tail(text)
                assert tokens is not None
                skip = 0
            else:  # the frozen items made it loose: the tail's items are, too
                _show_item_paragraphs(tokens, 0)
        lines = _complete_lines(tail)
        split = _last_block_start(tokens, lines)
        # A long list is one block: freeze its settled items too, or a 2,000-item list would
        # be parsed whole every frame (~200 ms). Rendering is per token, so the list's HTML
        # is the same cut at an item as whole.
        item = _last_item_start(tokens, split, lines) if split < len(tokens) else 0
        freeze = max(split, item)
        closed_html = self._render(tokens[skip:freeze] if freeze else [], env)
        closed_counts = (env["code_index"], env["formulas"])
        open_html = self._render(tokens[max(freeze, skip) :], env)
        html_out = self._frozen_html + closed_html + open_html
        if cut:
            html_out += text_shortened_html(env)
        block_lines = tokens[freeze].map if freeze else None
        if block_lines:  # freeze the closed blocks: the text before the last block's line
            self._frozen_source += tail[: _line_offset(tail, block_lines[0])]
            self._frozen_html += closed_html
            self._frozen_counts = closed_counts
            opening = tokens[split]
            self._open_list = (opening.type, opening.markup) if freeze == item else None
            self._list_loose = freeze == item and _list_is_loose(tokens, split)
        return html_out

    def _reset(self) -> None:
        self._frozen_source, self._frozen_html, self._frozen_counts = "", "", (0, 0)
        self._open_list = None
        self._list_loose = False

    def _parse_tail(self, text: str) -> tuple[list[Token] | None, dict[str, Any], str]:
        """Tokens of the text after the frozen part, or None when that part ends inside a
        list and the tail does not go on with it (same kind of list, same marker)."""
        tail = text[len(self._frozen_source) :]
        env = _new_env(self._dark, self._labels, self._wrap_code, *self._frozen_counts)
        # Code in cached chunks, also for a block that just closed: its chunks were highlighted
        # while it grew, so closing it costs nothing instead of a whole-block highlight.
        env["growing"] = True
        # Capping keeps line numbers (for the token maps below) of what it keeps.
        tokens = _MD.parse(cap_lines(tail), env)
        if self._open_list and (
            not tokens or (tokens[0].type, tokens[0].markup) != self._open_list
        ):
            return None, env, tail
        return tokens, env, tail

    @staticmethod
    def _render(tokens: Sequence[Token], env: dict[str, Any]) -> str:
        return replace_markers(_MD.renderer.render(tokens, _MD.options, env), env) if tokens else ""


def _last_block_start(tokens: Sequence[Token], complete_lines: int) -> int:
    """Index of the token opening the last top-level block whose start is settled.

    A start is settled once its line and the next are complete. On the unfinished last line,
    ``*`` looks like a new list until it grows into ``*1.``, a continuation of the paragraph
    before it; and a table (which ends the paragraph above it) exists only once its delimiter
    row, the line after its header, is there. 0 when no earlier block can be frozen.
    """
    starts = [
        i
        for i, t in enumerate(tokens)
        if t.level == 0 and t.nesting >= 0 and t.map and t.map[0] + 1 < complete_lines
    ]
    return starts[-1] if starts else 0


def _last_item_start(tokens: Sequence[Token], block: int, complete_lines: int) -> int:
    """Index of the last settled top-level item of the list opening at ``block``; 0 when the
    block is no list or its first item is the last settled one (nothing to freeze)."""
    if tokens[block].type not in _LIST_OPENS or tokens[block].level != 0:
        return 0
    items = []
    for i in range(block + 1, len(tokens)):
        token = tokens[i]
        if token.level == 0:  # the list's closing token
            break
        if token.type == "list_item_open" and token.level == 1 and token.map:
            if token.map[0] + 1 >= complete_lines:
                break
            items.append(i)
    return items[-1] if len(items) > 1 else 0


_LIST_OPENS = frozenset({"bullet_list_open", "ordered_list_open"})


def _item_paragraphs(tokens: Sequence[Token], block: int) -> list[Token]:
    """The paragraph tokens directly inside the items of the top-level list at ``block``."""
    found = []
    for token in tokens[block + 1 :]:
        if token.level == 0:
            break
        if token.level == 2 and token.type in ("paragraph_open", "paragraph_close"):
            found.append(token)
    return found


def _list_is_loose(tokens: Sequence[Token], block: int) -> bool:
    """Whether the list at ``block`` is loose: markdown-it hides a tight list's paragraphs."""
    return any(not t.hidden for t in _item_paragraphs(tokens, block))


def _show_item_paragraphs(tokens: Sequence[Token], block: int) -> None:
    for token in _item_paragraphs(tokens, block):
        token.hidden = False


def _complete_lines(text: str) -> int:
    """How many lines of ``text`` end with a newline (the rest is still being written)."""
    return text.count("\n")


def _line_offset(text: str, line: int) -> int:
    """Character offset where 0-based ``line`` of ``text`` starts."""
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    return offset


@functools.lru_cache(maxsize=4)
def _shared_streamer(dark: bool, labels: RenderLabels, wrap_code: bool) -> StreamingRenderer:
    # One reply streams at a time; one renderer per appearance keeps its frozen prefix.
    return StreamingRenderer(dark=dark, labels=labels, wrap_code=wrap_code)


def extract_code_blocks(text: str) -> list[str]:
    """The raw code of every fenced or indented code block, in document order.

    Parses blocks only: the right-click menu asks for this on the GUI thread, and inline
    parsing of a whole 1 MB message took seconds (issue 22 A8); code blocks are block-level.
    """
    tokens = _BLOCKS.parse(_check_text(text))
    return [raw_code(token) for token in tokens if token.type in _CODE_TOKENS]


def _build_block_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False})
    md.core.ruler.disable(["inline"])
    return md


_BLOCKS = _build_block_parser()


def document_css(dark: bool = False) -> str:
    """A default stylesheet for the QTextDocument that shows rendered messages.

    The rendered HTML already carries inline styles (Qt's CSS selector support is limited);
    this sets the same colours for anything the view adds around it.
    """
    theme = theme_for(dark)
    return (
        f"a {{ color: {theme.link}; text-decoration: underline; }}\n"
        f"code {{ background-color: {theme.inline_code_bg}; }}\n"
        f"pre {{ color: {theme.code_fg}; margin-top: 0px; margin-bottom: 0px; }}\n"
        f"blockquote {{ color: {theme.quote_fg}; }}\n"
        "table { margin-top: 4px; margin-bottom: 4px; }\n"
    )
