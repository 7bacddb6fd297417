"""Display limits that keep hostile or runaway model output from freezing the GUI.

Owns: the caps on what one message shows (a line's length, the whole text's length, a table's
rows, a code block's lines, how much code is syntax-highlighted) and the visible notes that
say something was shortened. Only the display is shortened: the stored text stays whole, and
Copy (the message's or a code block's) copies all of it. Does not own rendering itself
(``render.py``) or link finding (``linkify.py``).

Why: a 1 MB single-line code block, a 10,000-row table, or 100 kB of text in one paragraph
each cost Qt seconds to lay out and paint (issue 12, row 4), and markdown-it ~4 ms per KiB
to parse. With these caps a message's rendered HTML has a bounded size whatever it holds.

How: the renderer shows ``text[:text_cut(text)]`` and a note after it; ``cap_lines`` cuts long
lines of the Markdown source before parsing, leaving a noncharacter sentinel where it cut
(U+FDD0 is reserved for a program's internal use), and ``replace_markers`` turns the
sentinels in the rendered HTML into the styled, translated note. Table rows are capped on
tokens (``table_rows_plugin``) so the table stays a table; code lines where the code block
is rendered (``cap_code_lines``).
"""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

MAX_LINE_CHARS = 3_000  # one source line (a code line, a paragraph without line breaks)
MAX_TEXT_CHARS = 100_000  # the whole message (~25k tokens; longer replies are rare)
MAX_TABLE_ROWS = 400  # body rows of one table
MAX_CODE_LINES = 2_000  # lines of one code block
MAX_HIGHLIGHT_CHARS = 20_000  # longer code blocks are shown uncoloured (~10 ms per KiB)

LINE_MARK = "\ufdd0"


def text_cut(text: str) -> int:
    """How much of ``text`` is shown: all of it, or up to the last line break before the cap
    (the same cut however far the text grows, so a streaming reply's shown part is stable)."""
    if len(text) <= MAX_TEXT_CHARS:
        return len(text)
    # At a line break when one is near; else mid-line (that line is over the line cap anyway).
    end = text.rfind("\n", MAX_TEXT_CHARS - MAX_LINE_CHARS, MAX_TEXT_CHARS)
    return end if end > 0 else MAX_TEXT_CHARS


def cap_lines(text: str) -> str:
    """``text`` with each line over ``MAX_LINE_CHARS`` cut and marked; same number of lines."""
    # Drop sentinels already in the text: model output must not forge a note.
    text = text.replace(LINE_MARK, "")
    if len(text) <= MAX_LINE_CHARS or not _has_long_line(text):
        return text
    return "\n".join(
        line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + LINE_MARK
        for line in text.split("\n")
    )


def _has_long_line(text: str) -> bool:
    """Whether a line is longer than the cap, without splitting (the common case is no)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > MAX_LINE_CHARS:
            return True
        start = end + 1
    return False


def note_html(text: str, colour: str) -> str:
    """A shortening note as inline HTML (the colour is a theme ``#RRGGBB``, never user text)."""
    return f'<span style="color:{colour}"><em>{html.escape(text, quote=False)}</em></span>'


def text_shortened_html(env: dict[str, Any]) -> str:
    """The note after a message shown only in part, as a paragraph."""
    return f"<p>{note_html(env['labels'].text_shortened, env['theme'].quote_fg)}</p>\n"


def replace_markers(rendered: str, env: dict[str, Any]) -> str:
    """``rendered`` with each sentinel replaced by its translated note."""
    if LINE_MARK not in rendered:
        return rendered
    return rendered.replace(
        LINE_MARK, note_html(env["labels"].line_shortened, env["theme"].quote_fg)
    )


def cap_code_lines(code: str, more_lines_label: str) -> tuple[str, str]:
    """(the code to show, the note to add after it or ``""``) for a block's display."""
    if code.count("\n") < MAX_CODE_LINES:
        return code, ""
    lines = code.split("\n")
    hidden = len(lines) - MAX_CODE_LINES
    return "\n".join(lines[:MAX_CODE_LINES]), more_lines_label.format(hidden)


def _cap_tables(state: StateCore) -> None:
    """Drop body rows past ``MAX_TABLE_ROWS`` (a table's cells are inline: no nesting)."""
    kept: list[Token] = []
    in_body, rows, hidden = False, 0, 0
    for token in state.tokens:
        if token.type == "tbody_open":
            in_body, rows, hidden = True, 0, 0
        elif token.type == "tbody_close":
            in_body = False
        elif token.type == "tr_open" and in_body:
            rows += 1
            hidden += rows > MAX_TABLE_ROWS
        if in_body and rows > MAX_TABLE_ROWS:
            continue
        kept.append(token)
        if token.type == "table_close" and hidden:
            note = Token("hearth_rows_hidden", "", 0, level=token.level, block=True)
            note.meta = {"hidden": hidden}
            kept.append(note)
    state.tokens = kept


def _rows_hidden(self: Any, tokens: list[Token], idx: int, options: Any, env: dict) -> str:
    text = env["labels"].rows_hidden.format(tokens[idx].meta["hidden"])
    return f"<p>{note_html(text, env['theme'].quote_fg)}</p>\n"


def table_rows_plugin(md: MarkdownIt) -> None:
    """Install the table-row cap: ``md.use(table_rows_plugin)``."""
    # Before "inline": the hidden rows' cells are then never parsed.
    md.core.ruler.before("inline", "hearth_table_rows", _cap_tables)
    md.add_render_rule("hearth_rows_hidden", _rows_hidden)
