"""A user-editable blocklist: words, phrases or regular expressions that stop a turn, no model.

Owns parsing the list (one entry a line; ``#`` starts a comment line; ``re:`` before an entry
makes it a regular expression, otherwise it is a literal word or phrase), validating it, and
matching text against it. A literal matches case-insensitively, at word boundaries where it starts
or ends with a letter or digit of an alphabetic script ("ass" does not match "class"), and as a
plain substring in Chinese or Japanese text, which has no spaces. Text is compared after NFKC
folding, so full-width ``ｂｏｍｂ`` matches ``bomb``; what the user sees is never changed.

User patterns are untrusted input to a backtracking engine, so each is limited: at most
`MAX_PATTERN` characters and `MAX_ENTRIES` entries, refused if it matches the empty text
(it would flag everything), probed on hostile text when the list is loaded, and every search
runs under the `regex` module's time limit (`SEARCH_TIMEOUT_S`): a search that runs out fails
closed (the text counts as matched, and the error names the entry) rather than hanging a
reply. Does not own where the list is stored or edited (the app's preferences, a CLI file).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import regex  # type: ignore[import-untyped]

from engine.errors import InvalidParamsError
from engine.types import SafetyVerdict

MAX_ENTRIES = 1000
MAX_PATTERN = 300
SEARCH_TIMEOUT_S = 0.25  # per entry and text; a sound pattern takes microseconds here
PROBE_TIMEOUT_S = 0.2
# Texts that make catastrophic patterns ((a+)+$, (x|xx)*y, (\w+\s?)*$) backtrack for minutes.
_PROBES = ("a" * 3000 + "!", "x" * 3000 + "\n", ("ab " * 1500) + "\x00", "1" * 3000 + "a")
_WORDISH = regex.compile(r"[\p{L}\p{N}]")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the list: what the user wrote, and its compiled pattern."""

    text: str
    pattern: Any  # regex.Pattern[str]
    is_regex: bool


class Blocklist:
    """A validated list; `find` the first entry a text matches."""

    def __init__(self, entries: tuple[Entry, ...] = ()) -> None:
        self.entries = entries

    @classmethod
    def parse(cls, source: str) -> Blocklist:
        """The list in ``source``; InvalidParamsError naming the line for a bad entry."""
        entries: list[Entry] = []
        for number, raw in enumerate(source.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if len(entries) == MAX_ENTRIES:
                raise InvalidParamsError(f"blocklist: more than {MAX_ENTRIES} entries")
            entries.append(_entry(line, number))
        return cls(tuple(entries))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def find(self, text: str) -> Entry | None:
        """The first entry that ``text`` matches; a search that times out counts as a match
        (a pattern that cannot finish must not let text through)."""
        folded = fold(text)
        for entry in self.entries:
            try:
                if entry.pattern.search(folded, timeout=SEARCH_TIMEOUT_S):
                    return entry
            except TimeoutError:
                return entry
        return None

    def check(self, text: str, stage: str = "prompt") -> SafetyVerdict:
        """Unsafe with category "Blocklist" when ``text`` matches an entry; Safe otherwise."""
        if self.find(text) is None:
            return SafetyVerdict("Safe", stage=stage, source="blocklist")
        return SafetyVerdict("Unsafe", ("Blocklist",), stage=stage, source="blocklist")


def fold(text: str) -> str:
    """Text as entries are compared with it: NFKC (full-width to ASCII) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def _entry(line: str, number: int) -> Entry:
    is_regex = line.startswith("re:")
    body = line[3:].strip() if is_regex else fold(line)
    where = f"blocklist line {number} ({line[:40]!r})"
    if not body:
        raise InvalidParamsError(f"{where}: empty entry")
    if len(body) > MAX_PATTERN:
        raise InvalidParamsError(f"{where}: longer than {MAX_PATTERN} characters")
    source = body if is_regex else _literal_pattern(body)
    try:
        pattern = regex.compile(source, regex.IGNORECASE | regex.V1)
    except regex.error as exc:
        raise InvalidParamsError(f"{where}: not a valid regular expression ({exc})") from None
    if pattern.search("", timeout=PROBE_TIMEOUT_S):
        raise InvalidParamsError(f"{where}: matches empty text, so it would block everything")
    for probe in _PROBES:
        try:
            pattern.search(probe, timeout=PROBE_TIMEOUT_S)
        except TimeoutError:
            raise InvalidParamsError(
                f"{where}: too slow on long text (nested repetition such as (a+)+?); "
                "simplify the pattern"
            ) from None
    return Entry(line, pattern, is_regex)


def _literal_pattern(word: str) -> str:
    """A literal as a pattern: escaped, whitespace runs matching any whitespace, and word
    boundaries at an alphabetic end (none next to CJK, which is written without spaces)."""
    parts = [regex.escape(p) for p in word.split()]
    body = r"\s+".join(parts)
    start = r"\b" if _WORDISH.match(word[0]) and not _CJK.match(word[0]) else ""
    end = r"\b" if _WORDISH.match(word[-1]) and not _CJK.match(word[-1]) else ""
    return start + body + end
