"""Incremental detokenizer on the bundled SmolLM2 tokenizer: deltas concatenate exactly to
decode(ids), never hold a partial character (U+FFFD) or any part of a stop string."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.detokenizer import IncrementalDetokenizer
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

FFFD = "\ufffd"

TEXTS = {
    "cjk": "中文，你好世界。我们今天学习汉字。",
    "emoji_zwj": "Family: 👨‍👩‍👧‍👦 and a flag 🏳️‍🌈, thumbs 👍🏽!",
    "combining": "e\u0301 cafe\u0301 n\u0303 A\u030a and precomposed é",
    "digits": "12345 67.89 and 3.14159, -0.5e10",
    "code": "def f(x):\n    if x:\n        return [1, 2]\n\treturn {}\n",
    "a_comma_b": "a ,b",
    "leading_spaces": "   three leading spaces",
    "newlines": "\n\nline one\n\n\nline two\n",
    "mixed": "Ünïcödé — «quotes» ‘single’ 日本語 한국어 العربية עברית",
}


# Derandomized and without an example database: `make test` is repeatable and writes nothing.
PROPERTY = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def tok() -> Any:
    return smollm2_tokenizer()


def encode(tok: Any, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def stream(
    tok: Any, ids: Sequence[int], stop: Sequence[str] = (), **kwargs: Any
) -> tuple[list[str], IncrementalDetokenizer]:
    """Feed ``ids`` one by one; return every delta (the last one is finalize's)."""
    detok = IncrementalDetokenizer(tok, stop=stop, **kwargs)
    deltas = [detok.add(i) for i in ids]
    deltas.append(detok.finalize())
    return deltas, detok


def cut_at_first_stop(text: str, stops: Sequence[str]) -> str:
    """The reference: cut before the stop string that completes first (ends earliest)."""
    found = [(text.find(s) + len(s), text.find(s)) for s in stops if s in text]
    return text[: min(found)[1]] if found else text


class SlowTokenizer:
    """The real tokenizer seen through `decode` only, as a tokenizer without a Rust backend
    looks: exercises the windowed-decode path instead of DecodeStream."""

    def __init__(self, tok: Any) -> None:
        self.decode = tok.decode


@pytest.fixture(params=["fast", "window"])
def flavour(request, tok) -> Any:
    return tok if request.param == "fast" else SlowTokenizer(tok)


# --- the invariant ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", TEXTS)
def test_deltas_concatenate_to_decode_and_hold_no_partial_characters(tok, flavour, name) -> None:
    ids = encode(tok, TEXTS[name])
    deltas, detok = stream(flavour, ids)
    assert "".join(deltas) == tok.decode(ids, skip_special_tokens=True) == TEXTS[name]
    assert not any(FFFD in d for d in deltas)
    assert detok.text == TEXTS[name] and detok.token_ids == ids and not detok.stopped


def test_byte_level_tokens_really_split_characters(tok) -> None:
    # Guards the test above: some single SmolLM2 tokens decode to half an emoji or CJK char.
    ids = encode(tok, TEXTS["emoji_zwj"] + TEXTS["cjk"])
    assert any(FFFD in tok.decode([i]) for i in ids)
    deltas, _ = stream(tok, ids)
    assert "" in deltas[:-1]  # something was held back for a token


def test_special_tokens_are_removed_or_kept_on_request(tok) -> None:
    ids = encode(tok, "<|im_start|>assistant\nHi there<|im_end|>")
    assert "".join(stream(tok, ids)[0]) == "assistant\nHi there"
    kept = "".join(stream(tok, ids, skip_special_tokens=False)[0])
    assert kept == "<|im_start|>assistant\nHi there<|im_end|>"


def test_invalid_utf8_from_the_model_matches_decode(tok, flavour) -> None:
    # A lone UTF-8 lead byte followed by ASCII can never complete: decode() shows U+FFFD,
    # and so must the stream once the ASCII proves it.
    lead = tok.convert_tokens_to_ids("ä")  # byte-level symbol of byte 0xE4
    ids = [lead, *encode(tok, " ok")]
    deltas, _ = stream(flavour, ids)
    assert "".join(deltas) == tok.decode(ids, skip_special_tokens=True) == f"{FFFD} ok"
    assert deltas[0] == ""  # the lead byte alone was held


def test_a_character_cut_off_at_the_end_is_dropped_not_shown_as_fffd(tok, flavour) -> None:
    # max tokens or cancel can end generation half-way through an emoji's bytes.
    ids = encode(tok, "ok 👍")
    while FFFD not in tok.decode(ids):
        ids = ids[:-1]
    deltas, detok = stream(flavour, ids)
    assert "".join(deltas) == tok.decode(ids).rstrip(FFFD) == "ok "
    assert not any(FFFD in d for d in deltas) and detok.text == "ok "


@settings(PROPERTY, max_examples=150)
@given(text=st.text(min_size=0, max_size=60))
def test_property_random_unicode_round_trips(tok, text) -> None:
    ids = encode(tok, text)
    deltas, _ = stream(tok, ids)
    # SmolLM2's byte-level vocabulary lacks a few lead bytes (U+40000 encodes without its 0xF1),
    # so decode() itself can hold U+FFFD; only then may a delta (and not at the very end).
    full = tok.decode(ids, skip_special_tokens=True)
    assert "".join(deltas) == full.rstrip(FFFD)
    assert FFFD in full or not any(FFFD in d for d in deltas)


@settings(PROPERTY, max_examples=150)
@given(ids=st.lists(st.integers(min_value=0, max_value=49151), max_size=25))
def test_property_any_token_sequence_matches_decode(tok, ids) -> None:
    # The model may emit any ids, including byte tokens that never form valid UTF-8; only an
    # unfinished character at the very end is left out.
    full = tok.decode(ids, skip_special_tokens=True).rstrip(FFFD)
    for flavour in (tok, SlowTokenizer(tok)):
        assert "".join(stream(flavour, ids)[0]) == full


def llama_style_tokenizer() -> Any:
    """A tiny sentencepiece-style tokenizer (Metaspace, byte fallback, leading-space strip),
    the other decoder family local models use, built in memory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab |= {f"<0x{i:02X}>": 3 + i for i in range(256)}
    for piece in "▁abcdefghijklmnopqrstuvwxyz":
        vocab[piece] = len(vocab)
    merges = [("▁", "h"), ("▁h", "e"), ("l", "l"), ("▁he", "ll"), ("▁hell", "o")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    model = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>"))
    model.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    model.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=model, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


@pytest.mark.parametrize("name", ["cjk", "emoji_zwj", "a_comma_b", "leading_spaces", "code"])
def test_sentencepiece_byte_fallback_tokenizer(name) -> None:
    llama = llama_style_tokenizer()
    ids = encode(llama, TEXTS[name])
    full = llama.decode(ids, skip_special_tokens=True)
    for flavour in (llama, SlowTokenizer(llama)):
        deltas, _ = stream(flavour, ids)
        assert "".join(deltas) == full and not any(FFFD in d for d in deltas)


# --- stop strings ----------------------------------------------------------------------------


def check_stop_stream(
    tok: Any, text: str, stops: Sequence[str], via: Any = None
) -> tuple[list[str], Any]:
    """Stream ``text`` with ``stops`` (through ``via``, default ``tok``); after every token the
    emitted text must be a prefix of the reference cut (nothing of a stop string ever leaves
    early); at the end, equal to it."""
    ids = encode(tok, text)
    expected = cut_at_first_stop(tok.decode(ids, skip_special_tokens=True), stops)
    detok = IncrementalDetokenizer(via or tok, stop=stops)
    deltas = []
    for i in ids:
        deltas.append(detok.add(i))
        assert expected.startswith(detok.text)
        if detok.stopped:
            break
    deltas.append(detok.finalize())
    assert "".join(deltas) == detok.text == expected
    assert not any(FFFD in d for d in deltas)
    return deltas, detok


def test_stop_string_spanning_tokens_is_never_emitted(tok, flavour) -> None:
    text = "Answer: 42.\n###END### trailing words"
    assert len(encode(tok, "###END###")) > 1  # really spans tokens
    _, detok = check_stop_stream(tok, text, ["###END###"], via=flavour)
    assert detok.text == "Answer: 42.\n" and detok.stopped


def test_held_text_that_is_not_a_stop_is_released(tok) -> None:
    _, detok = check_stop_stream(tok, "a ## b ### c", ["###END"])
    assert detok.text == "a ## b ### c" and not detok.stopped


def test_stop_at_the_very_start_emits_nothing(tok) -> None:
    deltas, detok = check_stop_stream(tok, "STOP and more", ["STOP"])
    assert deltas == [""] * len(deltas) and detok.stopped


def test_stop_that_is_a_prefix_of_another_wins_when_it_completes_first(tok) -> None:
    _, detok = check_stop_stream(tok, "the ENDING here", ["ENDING", "END"])
    assert detok.text == "the " and detok.stopped


def test_earliest_completing_stop_wins_over_an_earlier_starting_one(tok) -> None:
    _, detok = check_stop_stream(tok, "xx abcd yy", ["abcd", "bc"])
    assert detok.text == "xx a"


def test_multi_character_cjk_stop_string(tok) -> None:
    _, detok = check_stop_stream(tok, "你好世界和平", ["世界"])
    assert detok.text == "你好" and detok.stopped


def test_stop_string_inside_an_emoji_sequence(tok) -> None:
    _, detok = check_stop_stream(tok, "we 👨‍👩‍👧‍👦 go", ["\u200d👧"])
    assert detok.text == "we 👨‍👩"


def test_stop_on_newline_pair(tok) -> None:
    _, detok = check_stop_stream(tok, "line one\nline two\n\nline three", ["\n\n"])
    assert detok.text == "line one\nline two"


def test_after_a_stop_add_returns_nothing(tok) -> None:
    detok = IncrementalDetokenizer(tok, stop=["X"])
    out = [detok.add(i) for i in encode(tok, "a X b c d")]
    assert detok.stopped and "".join(out) == "a " and out[-1] == ""
    assert detok.finalize() == ""


@settings(PROPERTY, max_examples=80)
@given(data=st.data())
def test_property_stop_strings_cut_at_the_first_completion(tok, data) -> None:
    alphabet = "ab #\n世界😀"  # small, so stop strings really occur and overlap
    text = data.draw(st.text(alphabet=alphabet, min_size=1, max_size=30))
    stops = data.draw(st.lists(st.text(alphabet=alphabet, min_size=1, max_size=4), max_size=3))
    check_stop_stream(tok, text, stops)


# --- live stop strings -----------------------------------------------------------------------


def test_set_stop_mid_stream_applies_to_what_follows(tok) -> None:
    ids = encode(tok, "one STOP two STOP three")
    detok = IncrementalDetokenizer(tok)
    half = len(encode(tok, "one STOP two"))
    first = "".join(detok.add(i) for i in ids[:half])
    assert first == "one STOP two" and not detok.stopped
    detok.set_stop(["STOP"])
    rest = "".join(detok.add(i) for i in ids[half:]) + detok.finalize()
    assert detok.stopped and first + rest == "one STOP two "


def test_clearing_stop_strings_releases_held_text(tok) -> None:
    detok = IncrementalDetokenizer(tok, stop=["##END"])
    held = "".join(detok.add(i) for i in encode(tok, "text ##"))
    assert held == "text "
    detok.set_stop([])
    assert detok.finalize() == "##" and detok.text == "text ##"


def test_new_stop_string_that_began_in_emitted_text_still_stops(tok) -> None:
    detok = IncrementalDetokenizer(tok)
    emitted = "".join(detok.add(i) for i in encode(tok, "abc ##"))
    detok.set_stop(["###"])
    rest = "".join(detok.add(i) for i in encode(tok, "# more")) + detok.finalize()
    assert emitted == "abc ##" and rest == "" and detok.stopped


def test_set_stop_rejects_a_bare_string(tok) -> None:
    with pytest.raises(TypeError, match="sequence of strings"):
        IncrementalDetokenizer(tok, stop="STOP")


def test_add_after_finalize_is_an_error(tok) -> None:
    detok = IncrementalDetokenizer(tok)
    detok.finalize()
    with pytest.raises(RuntimeError):
        detok.add(1)
