"""CJK-friendly emphasis: ``**症状：**文本说明`` and ``请看**“引号”**里面`` become bold.

Owns one markdown-it inline rule that replaces the built-in ``emphasis`` tokenizer: the same
delimiter bookkeeping, with the flanking test of the CommonMark "CJK-friendly" amendment
(tats-u/markdown-cjk-friendly, whose markdown-it plugin for JavaScript is the reference; its
Python port on PyPI pins markdown-it-py < 4 and patches ``StateInline`` globally, so the rule
is written here instead). Does not own rendering or any other inline syntax.

The rule: CommonMark decides whether ``*``/``**`` may open or close from the characters on
either side. A run between a letter and punctuation (``文**“`` or ``：**文``) is not flanking,
because CommonMark assumes words are separated by spaces. The amendment lets a ``*`` run open
and close, also when it touches punctuation, whenever the character on either side is CJK
(East Asian Wide, Fullwidth or Halfwidth, except emoji; Hangul). ``_`` keeps the CommonMark
rule (it is used inside identifiers), and text without CJK next to a delimiter parses exactly
as CommonMark: both branches reduce to the original test there.
"""

from __future__ import annotations

import unicodedata

from markdown_it import MarkdownIt
from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace
from markdown_it.rules_inline.state_inline import Delimiter, StateInline

# Wide symbols that are emoji, not text: pictographs and the emoji blocks.
_EMOJI_RANGES = ((0x1F000, 0x1FAFF), (0x2600, 0x27BF), (0x2300, 0x23FF), (0x2B00, 0x2BFF))


def is_cjk(char: str) -> bool:
    """Whether ``char`` (one code point) is a CJK character or CJK punctuation."""
    code = ord(char)
    if code < 0x1100:
        return False  # fast path: Latin, Greek, Cyrillic, ... (and the line-edge space)
    width = unicodedata.east_asian_width(char)
    if width in ("F", "H"):
        return True
    if width == "W":
        return not any(low <= code <= high for low, high in _EMOJI_RANGES)
    # Ambiguous (curly quotes, ·) counts only when the other side decides; Hangul jamo are N.
    return 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F


def _previous_char(src: str, start: int) -> str:
    """The character before ``start``, looking through a variation selector to its base."""
    if start <= 0:
        return " "  # the beginning of the line counts as whitespace
    char = src[start - 1]
    if 0xFE00 <= ord(char) <= 0xFE0E and start > 1 and not src[start - 2].isspace():
        return src[start - 2]
    return char


def _is_punct(char: str) -> bool:
    return isMdAsciiPunct(ord(char)) or isPunctChar(char)


def scan_delims(state: StateInline, start: int, can_split_word: bool) -> tuple[bool, bool, int]:
    """(can_open, can_close, run length) for the delimiter run at ``start``."""
    src, marker, pos = state.src, state.src[start], start
    while pos < state.posMax and src[pos] == marker:
        pos += 1
    last = _previous_char(src, start)
    following = src[pos] if pos < state.posMax else " "  # the line end counts as whitespace
    last_space, next_space = isWhiteSpace(ord(last)), isWhiteSpace(ord(following))
    if last_space or next_space:
        return not next_space, not last_space, pos - start
    last_punct, next_punct = _is_punct(last), _is_punct(following)
    # Neither side is whitespace. CommonMark: left-flanking = not before punctuation, or after
    # punctuation; right-flanking mirrors it. For "_" that leaves: open after punctuation,
    # close before punctuation (the intraword rule).
    can_open, can_close = last_punct, next_punct
    if can_split_word:  # "*": the CJK amendment
        either_cjk = is_cjk(following) or is_cjk(last)
        can_open = can_open or either_cjk or not next_punct
        can_close = can_close or either_cjk or not last_punct
    return can_open, can_close, pos - start


def _emphasis(state: StateInline, silent: bool) -> bool:
    """markdown-it's ``emphasis`` tokenizer, with ``scan_delims`` for the flanking test."""
    marker = state.src[state.pos]
    if silent or marker not in ("_", "*"):
        return False
    can_open, can_close, length = scan_delims(state, state.pos, marker == "*")
    for _ in range(length):
        token = state.push("text", "", 0)
        token.content = marker
        state.delimiters.append(
            Delimiter(
                marker=ord(marker),
                length=length,
                token=len(state.tokens) - 1,
                end=-1,
                open=can_open,
                close=can_close,
            )
        )
    state.pos += length
    return True


def cjk_emphasis_plugin(md: MarkdownIt) -> None:
    """Install the rule: ``md.use(cjk_emphasis_plugin)`` (post-processing stays built-in)."""
    md.inline.ruler.at("emphasis", _emphasis)
