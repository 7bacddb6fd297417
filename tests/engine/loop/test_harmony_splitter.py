"""gpt-oss's harmony splitter (`engine.harmony`) on every chunking of generated replies.

Whatever the chunking, the thinking and the answer come out the same, and no marker (nor a
prefix of one) is ever released to the screen. The engine, server, CLI and app around it are
tested in `tests.engine.loop.test_harmony`.
"""

from __future__ import annotations

import itertools

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.harmony import MARKERS, HarmonySplitter, split_harmony
from tests.engine.loop.test_harmony import REPLY, shows_no_marker

_FRAGMENTS = [*"ab <|>/\nxé中😊-_", "channel", "end", "<|ch", "|>"]
_TEXT = st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join)


@st.composite
def harmony_replies(draw: st.DrawFn) -> tuple[str, str, str]:
    """(reply, its thinking, its answer): analysis, maybe a tool call, maybe a preamble, final."""
    thinking, answer = draw(_TEXT), draw(_TEXT)
    preamble, call = draw(_TEXT), draw(_TEXT)
    assume(all(shows_no_marker(t) for t in (thinking, answer, preamble, call)))
    reply = f"<|channel|>analysis<|message|>{thinking}<|end|>"
    shown = answer
    if draw(st.booleans()):
        reply += f"<|start|>assistant<|channel|>commentary<|message|>{preamble}<|end|>"
        shown = preamble + answer
    if draw(st.booleans()):  # a tool call, answered in the same turn (left out of the text)
        reply += (
            "<|start|>assistant<|channel|>commentary to=functions.get_weather "
            f"<|constrain|>json<|message|>{call}<|call|>"
        )
        return reply, thinking, shown.removesuffix(answer)
    reply += f"<|start|>assistant<|channel|>final<|message|>{answer}"
    reply += draw(st.sampled_from(["<|return|>", ""]))  # "": cut off (stopped, max tokens)
    return reply, thinking, shown


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=300, deadline=None)
@given(harmony_replies(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_every_chunking_gives_the_same_thinking_and_answer(
    case: tuple[str, str, str], cuts: list[int]
) -> None:
    reply, thinking, answer = case
    splitter = HarmonySplitter()
    pieces = [p for chunk in _chunks(reply, cuts) for p in splitter.feed(chunk)]
    pieces += splitter.finish()
    assert (splitter.reasoning, splitter.answer) == (thinking, answer)
    assert "".join(t for k, t in pieces if k == "reasoning") == thinking
    assert "".join(t for k, t in pieces if k == "answer") == answer
    assert split_harmony(reply) == (thinking, answer)


_MARKERISH = st.lists(
    st.sampled_from([*MARKERS, "<|", "|>", "<", "|", "analysis", "final", " to=x", "a", "中"]),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_MARKERISH, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_no_marker_is_ever_released(text: str, cuts: list[int]) -> None:
    """Whatever a model writes (markers anywhere, broken ones, none), no marker is shown."""
    for reply in (text, REPLY[:40] + text, text + REPLY):
        splitter = HarmonySplitter()
        pieces = [p for c in _chunks(reply, cuts) for p in splitter.feed(c)] + splitter.finish()
        assert all(shows_no_marker(t) for _, t in pieces)
        assert splitter.reasoning == "".join(t for k, t in pieces if k == "reasoning")
        assert splitter.answer == "".join(t for k, t in pieces if k == "answer")


def test_a_reply_without_harmony_is_all_answer() -> None:
    assert split_harmony("Just text, <b>bold</b> and a|b.") == (
        "",
        "Just text, <b>bold</b> and a|b.",
    )
    assert split_harmony("<|channel|>analysis<|message|>hmm") == ("hmm", "")  # cut off thinking
