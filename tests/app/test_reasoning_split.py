"""`ThinkSplitter` and `ReplyText`: a reasoning model's stream split into thinking and answer,
whatever the chunking (property tests), and the thinking timed on an injected clock."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.chat.reasoning import ReplyText, ThinkSplitter, split_reasoning
from app.listmodels.messages import MessageItem

CASES = [
    # (stream, starts_thinking, reasoning, answer)
    ("<think>\nplan\n</think>\n\nHello", False, "\nplan\n", "Hello"),
    ("  <think>a</think>b", False, "a", "b"),
    ("Hello <think>not thinking</think>", False, "", "Hello <think>not thinking</think>"),
    ("plan it</think>\n\nAnswer", True, "plan it", "Answer"),
    ("plan it</think>\n\nAnswer", False, "plan it", "Answer"),  # prompt opened it, unsaid
    ("<think>cut short", False, "cut short", ""),
    ("<think>a</think>b</think>c", False, "a", "b</think>c"),
    ("<thin", False, "", "<thin"),
    ("<think></think>\n\n答案：四", False, "", "答案：四"),
    ("   ", False, "", "   "),
    ("\n\nPlain reply", False, "", "\n\nPlain reply"),
    ("<think>思考🙂</think>你好", False, "思考🙂", "你好"),
    ("a < b and c </ d", False, "", "a < b and c </ d"),
]


@pytest.mark.parametrize(("stream", "opened", "reasoning", "answer"), CASES)
def test_whole_stream_splits(stream: str, opened: bool, reasoning: str, answer: str) -> None:
    assert split_reasoning(stream, starts_thinking=opened) == (reasoning, answer)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


pieces = st.sampled_from(["<think>", "</think>", "<", "</", "<th", "think>", "\n", " ", "a", "思"])
streams = st.lists(st.one_of(pieces, st.text(max_size=4)), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(streams, st.lists(st.integers(min_value=0), max_size=12), st.booleans())
def test_any_chunking_gives_the_same_split(text: str, cuts: list[int], opened: bool) -> None:
    whole = split_reasoning(text, starts_thinking=opened)
    splitter = ThinkSplitter(starts_thinking=opened)
    seen: list[tuple[str, str]] = []
    for chunk in _chunks(text, cuts):
        splitter.feed(chunk)
        seen.append((splitter.reasoning, splitter.answer))
    splitter.finish()
    assert (splitter.reasoning, splitter.answer) == whole
    # Shown text only grows, except once: a late </think> turns the answer so far into thinking.
    jumps = [
        (r0, a0, r1, a1)
        for (r0, a0), (r1, a1) in itertools.pairwise(seen)
        if not (r1.startswith(r0) and a1.startswith(a0))
    ]
    assert len(jumps) <= (0 if opened else 1), jumps


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30), st.lists(st.integers(0), max_size=8))
def test_tagged_thinking_round_trips(thought: str, answer: str, cuts: list[int]) -> None:
    """Whatever the two parts hold (except the closing tag), every chunking splits them back."""
    thought = thought.replace("</think>", "")
    answer = answer.lstrip()
    text = f"<think>{thought}</think>{answer}"
    splitter = ThinkSplitter()
    for chunk in _chunks(text, cuts):
        splitter.feed(chunk)
        assert not splitter.answer.startswith("<think")
    splitter.finish()
    assert (splitter.reasoning, splitter.answer) == (thought, answer)


def Item(**fields: Any) -> MessageItem:
    return MessageItem.of("r", "assistant", fields.pop("content", ""), **fields)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_thinking_is_timed_until_the_answer_starts() -> None:
    item, clock = Item(), Clock()
    text = ReplyText(item, clock)
    text.begin(opens_thinking=False)
    text.add("<think>Let me")
    assert text.thinking and item.record.reasoning == "Let me" and item.record.content == ""
    clock.now += 5
    text.add(" see.")
    assert item.record.reasoning_seconds == 5  # live: the time so far
    clock.now += 7
    text.add("</think>\n\nFour.")
    assert (
        not text.thinking and item.record.content == "Four." and item.record.reasoning_seconds == 12
    )
    clock.now += 30
    text.add(" Done.")
    text.finish()
    assert item.record.reasoning_seconds == 12 and item.record.content == "Four. Done."


def test_prompt_opened_thinking_and_remote_reasoning() -> None:
    item, clock = Item(), Clock()
    text = ReplyText(item, clock)
    text.begin(opens_thinking=True)
    text.add("hmm")
    assert text.thinking and item.record.reasoning == "hmm"
    remote, clock2 = Item(), Clock()
    other = ReplyText(remote, clock2)
    other.add_reasoning("thinking apart")
    clock2.now += 3
    other.add("The answer")
    other.finish()
    assert (remote.record.reasoning, remote.record.content, remote.record.reasoning_seconds) == (
        "thinking apart",
        "The answer",
        3,
    )


def test_continuing_a_reply_extends_its_answer_and_keeps_its_thinking() -> None:
    item = Item(content="Half an", reasoning="thought", reasoning_seconds=4.0)
    text = ReplyText(item, Clock())
    text.begin(opens_thinking=True)  # the continued prompt does not reopen thinking
    text.add(" answer </think> with a tag")
    text.finish()
    assert item.record.content == "Half an answer </think> with a tag"
    assert (item.record.reasoning, item.record.reasoning_seconds) == ("thought", 4.0)
