"""Chunking: structure kept, budgets held, CJK sentences, never a cut inside a character."""

from __future__ import annotations

import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.documents import Document, Section, chunk_document, estimate_tokens
from app.documents.chunking import _can_cut, chunk_text, split_sentences


def _doc(*sections: Section) -> Document:
    return Document("d.txt", "text", sections)


def test_sections_are_never_merged_and_keep_their_locators() -> None:
    doc = _doc(Section("Title", "A", heading=True), Section("one", "A"), Section("two", "page 2"))
    chunks = chunk_document(doc, max_tokens=100)
    assert [(c.text, c.locator, c.ordinal) for c in chunks] == [
        ("one", "A", 0),
        ("two", "page 2", 1),
    ]


def test_paragraphs_pack_up_to_the_budget() -> None:
    text = "\n\n".join(f"para{i} " + "word " * 10 for i in range(6))
    count = lambda s: len(s.split())  # noqa: E731 - a word counter as the model's tokenizer
    chunks = chunk_document(_doc(Section(text)), max_tokens=25, count_tokens=count)
    assert [c.text.count("para") for c in chunks] == [2, 2, 2]
    assert all(count(c.text) <= 25 for c in chunks)


def test_chinese_is_cut_at_sentence_ends() -> None:
    text = "北京是中国的首都。上海是最大的城市！广州在南方吗？深圳很新。"
    chunks = chunk_document(_doc(Section(text)), max_tokens=10, count_tokens=len)
    assert [c.text for c in chunks] == [
        "北京是中国的首都。",
        "上海是最大的城市！",
        "广州在南方吗？",
        "深圳很新。",
    ]


def test_sentences_join_back_exactly() -> None:
    text = 'He said "stop." Then left! 然后？走了。Next line\nlast'
    assert "".join(split_sentences(text)) == text


def test_a_long_run_without_punctuation_is_cut_between_characters_only() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji of five code points
    text = ("é" + "a\u0301" + family + "中") * 40
    chunks = chunk_document(_doc(Section(text)), max_tokens=8, count_tokens=len)
    assert "".join(c.text for c in chunks) == text
    for c in chunks:
        assert not unicodedata.combining(c.text[0]) and c.text[0] != "\u200d"
        assert c.text[-1] != "\u200d"


@settings(max_examples=60, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from([*"中文字。！？ab .\n", "\u0301", "\u200d", "\ufe0f", "😀"]),
        max_size=400,
    ),
    st.integers(min_value=8, max_value=40),
)
def test_chunks_hold_the_budget_and_lose_no_text(text: str, budget: int) -> None:
    chunks = chunk_document(_doc(Section(text)), max_tokens=budget, count_tokens=len)
    joined = "".join(c.text for c in chunks)
    assert "".join(joined.split()) == "".join(text.split())
    for c in chunks:
        # Over budget only when one unsplittable cluster is longer than the budget.
        assert len(c.text) <= budget or not any(_can_cut(c.text, i) for i in range(1, len(c.text)))


def test_estimate_counts_cjk_characters_as_tokens() -> None:
    assert estimate_tokens("中文字") == 3
    assert estimate_tokens("abcdefgh") == 2


def test_cutting_a_long_run_without_sentence_ends_reads_each_character_a_few_times() -> None:
    # Issue 34: the longest fit was binary-searched up to the end of the text, so a 4 MB run of
    # words took 62 s (and the 20 M-character cap ~25 minutes). Counted work, not time: every
    # character handed to the token counter is tallied.
    seen = [0]

    def count(text: str) -> int:
        seen[0] += len(text)
        return estimate_tokens(text)

    text = "word " * 40_000  # 200,000 characters, one sentence
    pieces = chunk_text(text, 64, count)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")  # cut, nothing lost
    assert max(estimate_tokens(p) for p in pieces) <= 64
    assert seen[0] < 60 * len(text)  # was ~2,000 x


@pytest.mark.parametrize("unit", ["中。", "a. ", "a\n\n"])
def test_packing_under_the_estimate_counts_as_it_grows_with_the_same_cut(unit: str) -> None:
    text = unit * 2_000
    generic = chunk_text(text, 64, lambda t: estimate_tokens(t))  # counts every candidate
    assert chunk_text(text, 64, estimate_tokens) == generic
    start = time.monotonic()
    chunk_text(unit * 500_000, 256, estimate_tokens)  # 18 s a million characters of 中。 before
    assert time.monotonic() - start < 15
