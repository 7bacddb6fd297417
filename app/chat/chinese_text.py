"""Per-chat post-processing of Chinese replies as they stream: script, punctuation, quotes, spacing.

Owns `ChineseOptions` (what a chat asked for: Simplified ↔ Traditional conversion with OpenCC,
half-width punctuation between Chinese characters made full-width, curly quotes made corner
brackets, a space between Chinese and Latin letters or digits with pangu) and
`ReplyPostProcessor`, which applies them to a reply as its deltas arrive. The script may be
"auto": each reply follows its question's (`ChineseOptions.following`). Code (fenced blocks
and inline spans) is never touched: a converter would turn `print("设置")` into `print("設定")`
and break it.

Streaming needs care because OpenCC converts phrases, not characters (软件 → 軟體 only as a
pair), and spacing depends on both neighbours. So text is released only up to a *boundary*
(whitespace or punctuation, which no phrase spans); a run without one is released once it is
long, minus a tail as long as the longest dictionary phrase. Stop strings, the Markdown view
and storage all see the processed text.

Quotes (`QuoteMarks`): in Traditional replies (Taiwan and Hong Kong write 「」 and 『』), or when
``quotes`` is on, “ ” become 「 」 and ‘ ’ become 『 』 by nesting depth, the outer pair always
「」. Pairs are matched across deltas by a stack that lives as long as the reply; a ’ that closes
nothing, or sits between two letters (don’t), is an apostrophe and stays; a quote with no
Chinese beside it (He said “hi”) is left alone, and so is its partner. Does not own the
per-chat setting's storage or the UI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

import opencc
import pangu

Script = Literal["off", "auto", "traditional_tw", "traditional_hk", "simplified"]
_CONFIGS: dict[str, str] = {
    "traditional_tw": "s2twp",  # Taiwan standard and phrases: 软件 → 軟體
    "traditional_hk": "s2hk",  # Hong Kong standard: 软件 → 軟件
    "simplified": "tw2sp",  # from Taiwan phrases back too: 軟體 → 软件
}
_CANTONESE = frozenset("嘅咗唔喺冇嘢睇佢哋啲嚟乜")  # written Cantonese: Hong Kong's standard
_HOLD_TAIL = 12  # longer than OpenCC's longest phrase entries that matter in prose
_FORCE_AFTER = 48  # a run this long without a boundary is released (minus the tail)
# Whitespace and full-width punctuation only: pangu spaces around ASCII punctuation and the
# punctuation rule looks at the next character, so a cut after "," could change the result.
_BOUNDARY = re.compile(r"[\s，。！？；：、）」』》]")
# pangu's pair rules (quotes, hashtags) reach across a whole line: a line holding one of their
# marks is released whole when spacing is on. Its other rules look a few characters left, so a
# later piece of a line is spaced with the end of the earlier one as context.
_PANGU_PAIRS = re.compile("[\"'#\u201c\u201d\u05f4]")
_PANGU_CONTEXT = 16
_HAN = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_HAN_CHAR = re.compile(_HAN)
_HALF_PUNCT = re.compile(rf"(?<={_HAN})([,!?;:])(?={_HAN}|$)|(?<={_HAN})\.(?=$|{_HAN})", re.M)
_FULL = str.maketrans({",": "，", "!": "！", "?": "？", ";": "；", ":": "：", ".": "。"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FENCE_START = re.compile(r" {0,3}(`{0,2}|~{0,2})")  # could still become a fence line
_TICKS = re.compile(r"`+")


@dataclass(frozen=True, slots=True)
class ChineseOptions:
    """What a chat does to its replies; all off by default."""

    script: Script = "off"
    punctuation: bool = False
    spacing: bool = False
    quotes: bool = False  # corner brackets for quotes; always on for Traditional

    @property
    def corner_quotes(self) -> bool:
        return self.quotes or self.script in ("traditional_tw", "traditional_hk")

    @property
    def active(self) -> bool:
        return self.script != "off" or self.punctuation or self.spacing or self.quotes

    def following(self, language: str, question: str = "") -> ChineseOptions:
        """For "auto": the script of the question's language (a BCP 47 tag from
        `engine.safety.language`): Traditional for zh-Hant (Hong Kong's when the question
        writes Cantonese), Simplified for zh-Hans, no conversion otherwise."""
        if self.script != "auto":
            return self
        script: Script = "off"
        if language == "zh-Hant":
            cantonese = any(c in question for c in _CANTONESE)
            script = "traditional_hk" if cantonese else "traditional_tw"
        elif language == "zh-Hans":
            script = "simplified"
        return replace(self, script=script)

    def to_dict(self) -> dict[str, object]:
        return {
            "script": self.script,
            "punctuation": self.punctuation,
            "spacing": self.spacing,
            "quotes": self.quotes,
        }

    @classmethod
    def from_dict(cls, data: object) -> ChineseOptions:
        """Tolerant of anything stored: unknown or bad values fall back to off."""
        if not isinstance(data, dict):
            return cls()
        script = data.get("script")
        return cls(
            script=script if script in _CONFIGS or script == "auto" else "off",
            punctuation=data.get("punctuation") is True,
            spacing=data.get("spacing") is True,
            quotes=data.get("quotes") is True,
        )


@cache
def _converter(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(config)  # loading the dictionaries takes ~50 ms: once per config


def contains_chinese(text: str, at_least: int = 2) -> bool:
    """Whether ``text`` holds ``at_least`` Chinese (Han) characters: a question in Chinese,
    not a Latin one quoting a single character."""
    return len(_HAN_CHAR.findall(text, 0, 4096)) >= at_least


def process_prose(text: str, options: ChineseOptions, quotes: QuoteMarks | None = None) -> str:
    """``text`` (no code in it) with ``options`` applied; ``quotes`` carries open quotes over
    from the reply's earlier text (a fresh one when None)."""
    if options.script in _CONFIGS:  # "auto" is resolved per question (`following`) first
        text = _converter(_CONFIGS[options.script]).convert(text)
    if options.corner_quotes:
        text = (quotes or QuoteMarks()).convert(text)
    if options.punctuation:
        text = _HALF_PUNCT.sub(lambda m: m.group(0).translate(_FULL), text)
    if options.spacing:
        text = spaced(text)
    return text


def spaced(text: str, context: str = "") -> str:
    """``text`` spaced by pangu as if it followed ``context`` (the prose just before it on the
    same line, already shown): only what pangu makes of ``text`` itself, the space it puts at
    the junction included."""
    if not context:
        return str(pangu.space_text(text))
    whole, before = str(pangu.space_text(context + text)), str(pangu.space_text(context))
    return whole[len(before) :] if whole.startswith(before) else str(pangu.space_text(text))


def process_markdown(text: str, options: ChineseOptions) -> str:
    """A whole reply with ``options`` applied to its prose; code blocks and spans kept as is."""
    processor = ReplyPostProcessor(options)
    return processor.feed(text) + processor.flush()


class ReplyPostProcessor:
    """Feed a reply's deltas in order; get back the processed text to show and store."""

    def __init__(self, options: ChineseOptions) -> None:
        self.options = options
        self._pending = ""  # received but not yet released
        self._in_fence: str | None = None  # the fence marker while inside a code block
        self._quotes = QuoteMarks()  # quotes opened earlier in this reply
        self._context = ""  # this line's prose released so far, as pangu's left context
        self._unspaced = replace(options, spacing=False)

    def feed(self, delta: str) -> str:
        if not self.options.active:
            return delta
        self._pending += delta
        out: list[str] = []
        while True:
            newline = self._pending.find("\n")
            if newline < 0:
                break
            line, self._pending = self._pending[: newline + 1], self._pending[newline + 1 :]
            out.append(self._line(line))
        out.append(self._release_partial_line())
        return "".join(out)

    def flush(self) -> str:
        """The rest, at the end of the reply (or when it stops)."""
        rest, self._pending = self._pending, ""
        if not self.options.active or not rest:
            return rest
        return rest if self._in_fence else self._prose_with_code_spans(rest)

    def _line(self, line: str) -> str:
        fence = _FENCE.match(line)
        if self._in_fence is not None:
            marker = fence.group(1) if fence else ""
            if marker[:1] == self._in_fence[0] and len(marker) >= len(self._in_fence):
                self._in_fence = None  # a closing fence: same character, at least as long
            return line
        if fence:
            self._in_fence = fence.group(1)
            return line
        out = self._prose_with_code_spans(line)
        self._context = ""
        return out

    def _release_partial_line(self) -> str:
        """The part of an unfinished line that no later text can change."""
        maybe_fence = _FENCE.match(self._pending) or _FENCE_START.fullmatch(self._pending)
        if self._in_fence is not None or maybe_fence:
            return ""  # inside code, or maybe the start of a fence line: wait for the line
        text = self._pending
        if self.options.spacing and _PANGU_PAIRS.search(text):
            return ""
        parts, settled = _code_spans(text, streaming=True)
        if settled < len(text):  # maybe an open code span: release only what precedes it,
            # less the character before it (pangu spaces a backtick by its left neighbour)
            text = text[: max(settled - 1, 0)]
            parts, _ = _code_spans(text)
        cut = _last_cut(parts)
        if cut == 0 and len(text) >= _FORCE_AFTER and "`" not in text:
            cut = _between_han(text, len(text) - _HOLD_TAIL)
        if cut == 0:
            return ""
        released, self._pending = self._pending[:cut], self._pending[cut:]
        return self._prose_with_code_spans(released)

    def _prose_with_code_spans(self, text: str) -> str:
        parts, _ = _code_spans(text)
        return "".join(self._prose(p, code) for p, code in parts)

    def _prose(self, part: str, code: bool) -> str:
        if code:  # a code span: kept, and pangu's context starts again after it
            self._context = ""
            return part
        text = process_prose(part, self._unspaced, self._quotes)
        if not self.options.spacing:
            return text
        out, self._context = spaced(text, self._context), (self._context + text)[-_PANGU_CONTEXT:]
        return out


_OPENING = {"“": "”", "‘": "’"}
_CORNERS = (("「", "」"), ("『", "』"))  # by depth: outer, inner, then again
# CJK punctuation, kana, Han and full-width forms: a quote beside one of these is Chinese text's.
_CJK_NEAR = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")


class QuoteMarks:
    """Curly quotes to corner brackets, for one reply's prose in order (see the module
    docstring). The stack holds each open quote's closer and what it becomes."""

    def __init__(self) -> None:
        self._open: list[tuple[str, str]] = []  # (the curly closer awaited, its replacement)
        self._before = ""  # the last character of the prose converted so far

    def convert(self, text: str) -> str:
        out: list[str] = []
        for i, char in enumerate(text):
            after = text[i + 1] if i + 1 < len(text) else ""
            before = out[-1][-1:] if out else self._before
            out.append(self._one(char, before, after))
        if out:
            self._before = out[-1][-1:] or self._before
        return "".join(out)

    def _one(self, char: str, before: str, after: str) -> str:
        if char in _OPENING:
            chinese = bool(_CJK_NEAR.match(before) or _CJK_NEAR.match(after))
            depth = sum(1 for _, new in self._open if new != "")
            corner = _CORNERS[depth % 2] if chinese else ("", "")
            self._open.append((_OPENING[char], corner[1]))
            return corner[0] or char
        if char not in ("”", "’"):
            return char
        if char == "’" and _LATIN_LETTER.match(before) and _LATIN_LETTER.match(after):
            return char  # an apostrophe: don’t, it’s
        for depth in range(len(self._open) - 1, -1, -1):
            if self._open[depth][0] == char:
                replacement = self._open[depth][1]
                del self._open[depth:]  # inner quotes left open close with it
                return replacement or char
        return char  # closes nothing: an apostrophe (the students’) or a stray mark


def _code_spans(text: str, streaming: bool = False) -> tuple[list[tuple[str, bool]], int]:
    """``text`` split into (piece, is_code) for its prose and its inline code spans, as
    CommonMark reads them: a run of n backticks opens a span that the next run of exactly n
    closes; a run that nothing closes is prose. Also returns how much of ``text`` is settled:
    with ``streaming``, text still to come could close an open run, or lengthen a run at the
    end, so the split is final only up to the first such run (``len(text)`` when all is)."""
    parts: list[tuple[str, bool]] = []
    prose_from, pos, settled = 0, 0, len(text)
    while (opener := _TICKS.search(text, pos)) is not None:
        closer = _TICKS.search(text, opener.end())
        while closer is not None and len(closer.group()) != len(opener.group()):
            closer = _TICKS.search(text, closer.end())
        if closer is None or (streaming and closer.end() == len(text)):
            if streaming:  # an open run, or a closer that may yet grow: not final from here
                settled = min(settled, opener.start())
            pos = opener.end()
            continue
        if opener.start() > prose_from:
            parts.append((text[prose_from : opener.start()], False))
        parts.append((text[opener.start() : closer.end()], True))
        prose_from = pos = closer.end()
    if prose_from < len(text):
        parts.append((text[prose_from:], False))
    return parts, settled


def _last_cut(parts: list[tuple[str, bool]]) -> int:
    """Where the text split into ``parts`` (by `_code_spans`) may be cut: after its last
    boundary outside code, or right after a code span; 0 when nowhere."""
    cut, offset = 0, 0
    for part, code in parts:
        if code:
            cut = offset + len(part)
        else:
            cut = max([cut, *(offset + m.end() for m in _BOUNDARY.finditer(part))])
        offset += len(part)
    return cut


def _between_han(text: str, before: int) -> int:
    """The last position up to ``before`` between two Chinese characters (where neither the
    spacing nor the punctuation rule looks across), or 0."""
    for i in range(before, 0, -1):
        if _HAN_CHAR.match(text[i - 1]) and _HAN_CHAR.match(text[i]):
            return i
    return 0
