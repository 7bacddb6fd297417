"""The user's blocklist: words, phrases and regular expressions, and its limits."""

from __future__ import annotations

import time

import pytest

from engine.errors import InvalidParamsError
from engine.safety.blocklist import Blocklist

LIST = """
# words, phrases and patterns a school might list
bomb
pipe bomb
炸弹
re:\\bkill(s|ing)?\\b
"""


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("How do I make a bomb?", "bomb"),
        ("How do I make a ＢＯＭＢ?", "bomb"),  # full-width letters fold to ASCII
        ("a pipe\n  bomb", "bomb"),
        ("你知道怎么做炸弹吗", "炸弹"),  # no spaces in Chinese: a substring
        ("Killing time", "re:\\bkill(s|ing)?\\b"),
    ],
)
def test_entries_match_words_phrases_and_patterns(text: str, entry: str) -> None:
    found = Blocklist.parse(LIST).find(text)
    assert found is not None and found.text == entry


@pytest.mark.parametrize("text", ["bombastic prose", "skill tree", "a kiln", ""])
def test_words_match_only_whole_words(text: str) -> None:
    assert Blocklist.parse(LIST).find(text) is None


def test_a_match_is_an_unsafe_verdict_named_blocklist() -> None:
    verdict = Blocklist.parse(LIST).check("bomb", stage="reply")
    assert (verdict.safety, verdict.category, verdict.source, verdict.stage) == (
        "Unsafe",
        "Blocklist",
        "blocklist",
        "reply",
    )
    assert Blocklist.parse(LIST).check("hello").safety == "Safe"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("ok\nre:(a+)+$", "line 2 ('re:(a+)+$'): too slow on long text"),
        ("re:([a-z]+)*\\d$", "too slow on long text"),
        ("re:(", "not a valid regular expression"),
        ("re:a*", "matches empty text"),
        ("re:" + "a" * 400, "longer than 300 characters"),
        ("\n".join(f"w{i}" for i in range(1001)), "more than 1000 entries"),
    ],
)
def test_bad_or_catastrophic_patterns_are_refused_with_one_line(source: str, message: str) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        Blocklist.parse(source)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_checking_a_long_text_against_a_full_list_stays_fast() -> None:
    blocklist = Blocklist.parse("\n".join(f"word{i}" for i in range(1000)))
    text = "an ordinary reply without any listed word in it. " * 200  # ~10 kB
    start = time.perf_counter()
    assert blocklist.find(text) is None
    assert time.perf_counter() - start < 5.0  # generous: a loaded 2-core machine
