"""The streaming reviewer's holdback: what is released when, and never after a flag."""

from __future__ import annotations

import pytest

from engine.errors import InvalidParamsError
from engine.safety.qwen3guard import flags
from engine.safety.reply_review import Pace, ReplyReview
from engine.types import SafetyVerdict


class WordGuard:
    """A check that flags any text containing ``word`` and records what it was asked."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.asked: list[str] = []

    def __call__(self, text: str) -> SafetyVerdict:
        self.asked.append(text)
        bad = self.word in text
        return SafetyVerdict("Unsafe" if bad else "Safe", ("PII",) if bad else (), "reply")


def feed_all(review: ReplyReview, pieces: list[str]) -> list[str]:
    shown = [review.feed(piece, i + 1) for i, piece in enumerate(pieces)]
    return [*shown, review.finish()]


def test_text_is_released_sentence_by_sentence_after_each_check() -> None:
    guard = WordGuard("555-0100")
    review = ReplyReview(guard, flags, Pace(min_tokens=2, every_tokens=100))
    shown = feed_all(review, ["Hello", " there.", " Call", " me.", " Bye"])
    # "there." ends a sentence once the next piece shows whitespace after it (not "3.14").
    assert shown == ["", "", "Hello there.", "", " Call me.", " Bye"]
    assert guard.asked == ["Hello there.", "Hello there. Call me.", "Hello there. Call me. Bye"]


def test_a_long_run_without_a_sentence_end_is_checked_every_n_tokens() -> None:
    review = ReplyReview(WordGuard("never"), flags, Pace(min_tokens=1, every_tokens=3))
    shown = feed_all(review, ["x = 1", "\ny = 2", "; z", " = 3", " + 4", " + 5"])
    assert "".join(shown) == "x = 1\ny = 2; z = 3 + 4 + 5"
    assert review.checks >= 2


def test_nothing_is_released_after_a_flag_not_even_later_safe_text() -> None:
    guard = WordGuard("555-0100")
    review = ReplyReview(guard, flags, Pace(min_tokens=1, every_tokens=100))
    shown = feed_all(review, ["Sure.", " My number is 555-0100.", " Anyway.", " Bye."])
    assert "".join(shown) == "Sure."
    assert review.flagged is not None and review.flagged.category == "PII"
    assert len(guard.asked) == 2  # not asked again once flagged


def test_numbers_and_abbreviations_are_not_sentence_ends() -> None:
    guard = WordGuard("never")
    review = ReplyReview(guard, flags, Pace(min_tokens=1, every_tokens=100))
    assert review.feed("Pi is 3.14", 5) == ""  # "3." is no sentence end
    assert review.feed("15 and so on。好", 9) == "Pi is 3.1415 and so on。"


def test_controversial_flags_only_when_strict() -> None:
    def controversial(text: str) -> SafetyVerdict:
        return SafetyVerdict("Controversial", ("Politically Sensitive Topics",), "reply")

    lenient = ReplyReview(controversial, flags, Pace(1, 10))
    assert lenient.feed("A view.\n", 2) == "A view.\n"
    strict = ReplyReview(controversial, lambda v: flags(v, strict=True), Pace(1, 10))
    assert strict.feed("A view.\n", 2) == ""
    assert strict.flagged is not None


def test_the_pace_is_validated() -> None:
    with pytest.raises(InvalidParamsError, match="min_tokens <= every_tokens"):
        Pace(min_tokens=10, every_tokens=5)


def test_an_overlapped_check_lets_the_reply_go_on_and_releases_when_done() -> None:
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    gate = threading.Event()

    def slow_guard(text: str) -> SafetyVerdict:
        gate.wait(10)
        return SafetyVerdict("Safe", stage="reply")

    with ThreadPoolExecutor(1) as pool:
        review = ReplyReview(slow_guard, flags, Pace(1, 100), pool.submit)
        assert review.feed("One.\n", 2) == ""  # the check started; the reply is not held up
        assert review.feed("Two", 3) == ""  # still running: nothing unchecked is shown
        gate.set()
        shown, deadline = "", time.monotonic() + 10
        while not shown and time.monotonic() < deadline:
            shown = review.feed("", 3)
            time.sleep(0.01)
        assert shown == "One.\n"
        assert review.finish() == "Two" and review.released == "One.\nTwo"


def test_checks_overlap_only_with_cores_to_spare() -> None:
    from engine.safety.review import overlap_helps

    assert not overlap_helps(2) and overlap_helps(4) and overlap_helps(16)
