"""Preprocessing: cleaning, chat-template rendering (model template and ChatML fallback), token
counting and context fitting, on the bundled SmolLM2 tokenizer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ContextOverflowError, InvalidParamsError
from engine.text import (
    CHATML_TEMPLATE,
    clean_text,
    count_tokens,
    fit_context,
    opens_thinking,
    render_prompt,
    supports_thinking_toggle,
)
from engine.types import Message
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

SMOL_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def tok() -> Any:
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def plain_tok(tok) -> Any:
    """The same tokenizer with its chat template removed, as a model without one ships."""
    bare = copy.deepcopy(tok)
    bare.chat_template = None
    return bare


def sys(text: str) -> Message:
    return Message("system", text)


def user(text: str) -> Message:
    return Message("user", text)


def bot(text: str) -> Message:
    return Message("assistant", text)


# --- clean_text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\ufeffhello", "hello"),  # BOM
        ("zero\u200bwidth\ufeffno\u2060break", "zerowidthnobreak"),
        ("a\r\nb\rc\nd", "a\nb\nc\nd"),
        ("line\u2028sep\u2029para\x85nel", "line\nsep\npara\nnel"),
        ("bell\x07 null\x00 esc\x1b[0m del\x7f c1\x9b", "bell null esc[0m del c1"),
        ("tab\tand\nnewline kept", "tab\tand\nnewline kept"),
        ("lone \ud800 high and \udfff low", "lone \ufffd high and \ufffd low"),
        ("pair \ud83d\ude00 joined", "pair 😀 joined"),
        ("e\u0301 stays decomposed", "e\u0301 stays decomposed"),  # no NFC
        ("ｆｕｌｌ width ﬁ", "ｆｕｌｌ width ﬁ"),  # no NFKC
        ("   indented\n\n", "   indented\n\n"),
        ("中文，你好世界", "中文，你好世界"),
    ],
)
def test_clean_text(raw, clean) -> None:
    assert clean_text(raw) == clean


def test_clean_text_keeps_meaningful_joiners() -> None:
    family = "👨\u200d👩\u200d👧\u200d👦"
    persian = "می\u200cخواهم"  # ZWNJ shapes the word
    devanagari = "क्\u200dष"
    assert clean_text(f"{family} {persian} {devanagari}") == f"{family} {persian} {devanagari}"


def test_clean_text_drops_stray_joiners() -> None:
    assert clean_text("\u200dstart end\u200c mid \u200d\u200c word") == "start end mid  word"


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.text(st.characters(exclude_categories=[])))  # surrogates included
def test_clean_text_output_is_valid_stable_and_free_of_junk(raw) -> None:
    out = clean_text(raw)
    out.encode("utf-8")  # no lone surrogates left
    assert clean_text(out) == out
    assert not any(c in out for c in "\r\ufeff\u200b\u2060\x00\x1b\x7f")


# --- render_prompt ---------------------------------------------------------------------------


def test_smollm2_template_renders_as_transformers_does(tok) -> None:
    messages = [sys("Be brief."), user("Hi"), bot("Hello!"), user("2+2?")]
    expected = tok.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert (
        render_prompt(tok, messages)
        == expected
        == (
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
    )


def test_model_template_adds_its_own_default_system_prompt(tok) -> None:
    assert render_prompt(tok, [user("Hi")]).startswith(f"<|im_start|>system\n{SMOL_SYSTEM}")


def test_continue_last_leaves_the_assistant_message_open(tok) -> None:
    text = render_prompt(tok, [user("Count"), bot("1, 2,")], continue_last=True)
    assert text.endswith("<|im_start|>assistant\n1, 2,")


def test_render_cleans_message_content(tok) -> None:
    text = render_prompt(tok, [user("\ufeffline1\r\nline2\x00")])
    assert "user\nline1\nline2<|im_end|>" in text


def test_chatml_fallback_for_a_tokenizer_without_template(plain_tok) -> None:
    messages = [sys("S"), user("Hi"), bot("Yo"), user("中文")]
    assert render_prompt(plain_tok, messages) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\n中文<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_prompt(plain_tok, messages[:3], continue_last=True).endswith("assistant\nYo")
    assert "message['role']" in CHATML_TEMPLATE


NO_SYSTEM_TEMPLATE = (  # what Gemma's template does with a system message
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="module")
def no_system_tok(tok) -> Any:
    strict = copy.deepcopy(tok)
    strict.chat_template = NO_SYSTEM_TEMPLATE
    return strict


def test_system_prompt_is_folded_into_the_first_user_message_when_refused(no_system_tok) -> None:
    text = render_prompt(no_system_tok, [sys("Be brief."), user("Hi"), bot("Yo"), user("Q")])
    assert text == "<user>Be brief.\n\nHi</user><assistant>Yo</assistant><user>Q</user><assistant>"


def test_a_template_that_rejects_the_conversation_gives_a_typed_error(no_system_tok) -> None:
    with pytest.raises(InvalidParamsError, match=r"chat template rejected.*System role not supp"):
        render_prompt(no_system_tok, [sys("Only a system prompt")])


def test_render_needs_a_message(tok) -> None:
    with pytest.raises(InvalidParamsError, match="at least one message"):
        render_prompt(tok, [])


def test_count_tokens_counts_the_rendered_prompt(tok) -> None:
    messages = [user("你好世界, hello")]
    ids = tok(render_prompt(tok, messages), add_special_tokens=False)["input_ids"]
    assert count_tokens(tok, messages) == len(ids)
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")  # markers are single tokens


# --- fit_context -----------------------------------------------------------------------------


def conversation(turns: int) -> list[Message]:
    out = [sys("You are terse.")]
    for i in range(turns):
        out += [user(f"Question {i}: tell me about the number {i}."), bot(f"Number {i} is fine.")]
    return [*out, user("Last question?")]


def test_everything_fits_nothing_dropped(tok) -> None:
    messages = conversation(3)
    fitted = fit_context(tok, messages, context_window=2048, reserve_tokens=256)
    assert fitted.dropped_messages == 0 and fitted.messages == tuple(messages)
    assert fitted.text == render_prompt(tok, messages)
    assert fitted.ids == tok(fitted.text, add_special_tokens=False)["input_ids"]


def test_drops_whole_oldest_turns_keeping_the_system_prompt(tok) -> None:
    messages = conversation(8)
    keep_two = [messages[0], *messages[-5:]]  # system + last two full turns + last question
    window = count_tokens(tok, keep_two) + 100
    fitted = fit_context(tok, messages, context_window=window, reserve_tokens=100)
    assert fitted.messages == tuple(keep_two)
    assert fitted.dropped_messages == len(messages) - len(keep_two) == 12
    assert len(fitted.ids) + 100 <= window


def test_drops_the_fewest_turns_possible(tok) -> None:
    messages = conversation(12)
    for window in range(90, 420, 37):
        fitted = fit_context(tok, messages, context_window=window, reserve_tokens=20)
        assert len(fitted.ids) + 20 <= window
        if fitted.dropped_messages:  # one turn (two messages) fewer would not fit
            kept_one_more = [messages[0], *messages[-(len(fitted.messages) - 1) - 2 :]]
            assert count_tokens(tok, kept_one_more) + 20 > window


def test_a_turn_with_several_replies_goes_as_a_whole(tok) -> None:
    messages = [user("old " * 40), bot("a"), bot("b"), user("new")]
    window = count_tokens(tok, [user("new")]) + 10
    fitted = fit_context(tok, messages, context_window=window, reserve_tokens=10)
    assert fitted.messages == (user("new"),) and fitted.dropped_messages == 3


def test_system_messages_inside_dropped_turns_are_kept(tok) -> None:
    messages = [
        bot("Hi, I am your assistant " * 10),
        user("old " * 30),
        sys("Mode: JSON"),
        user("new"),
    ]
    window = count_tokens(tok, [sys("Mode: JSON"), user("new")]) + 5
    fitted = fit_context(tok, messages, context_window=window, reserve_tokens=5)
    assert fitted.messages == (sys("Mode: JSON"), user("new")) and fitted.dropped_messages == 2


def test_continue_last_keeps_the_assistant_message_being_continued(tok) -> None:
    messages = [user("old " * 50), bot("old reply"), user("Write a poem"), bot("Roses are")]
    last = messages[-2:]
    window = len(tok(render_prompt(tok, last, continue_last=True))["input_ids"]) + 8
    fitted = fit_context(tok, messages, context_window=window, reserve_tokens=8, continue_last=True)
    assert fitted.messages == tuple(last) and fitted.text.endswith("assistant\nRoses are")


def test_overflow_names_the_token_counts(tok) -> None:
    messages = [sys("S"), user("old"), bot("old"), user("word " * 300)]
    with pytest.raises(ContextOverflowError) as info:
        fit_context(tok, messages, context_window=256, reserve_tokens=64)
    needed = count_tokens(tok, [sys("S"), user("word " * 300)])
    message = str(info.value)
    assert f"needs {needed} tokens" in message and "64 reserved" in message
    assert "holds 256 tokens" in message and "2 earlier messages" in message


def test_reserve_larger_than_the_window_overflows(tok) -> None:
    with pytest.raises(ContextOverflowError, match="holds 100 tokens"):
        fit_context(tok, [user("hi")], context_window=100, reserve_tokens=100)


def test_bad_budgets_are_rejected(tok) -> None:
    with pytest.raises(InvalidParamsError, match="context_window must be >= 1, got 0"):
        fit_context(tok, [user("hi")], context_window=0, reserve_tokens=0)
    with pytest.raises(InvalidParamsError, match="reserve_tokens must be >= 0, got -1"):
        fit_context(tok, [user("hi")], context_window=10, reserve_tokens=-1)


def test_chinese_conversation_fits_by_dropping_turns(tok) -> None:
    messages = [sys("用中文回答。")]
    for i in range(6):
        messages += [
            user(f"第{i}个问题：你好世界，今天天气怎么样？"),
            bot("今天天气很好，阳光明媚。"),
        ]
    messages.append(user("最后一个问题？"))
    window = count_tokens(tok, [messages[0], *messages[-3:]]) + 32
    fitted = fit_context(tok, messages, context_window=window, reserve_tokens=32)
    assert fitted.messages == (messages[0], *messages[-3:]) and fitted.dropped_messages == 10
    assert tok.decode(fitted.ids).endswith("最后一个问题？<|im_end|>\n<|im_start|>assistant\n")


class CountingTokenizer:
    """The real tokenizer, counting how often a prompt is rendered."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.renders = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._tok(*args, **kwargs)

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
        self.renders += 1
        return self._tok.apply_chat_template(*args, **kwargs)


def test_long_conversations_render_logarithmically_often(tok) -> None:
    messages = conversation(200)
    counting = CountingTokenizer(tok)
    window = count_tokens(tok, [messages[0], *messages[-21:]]) + 10
    fitted = fit_context(counting, messages, context_window=window, reserve_tokens=10)
    assert fitted.dropped_messages == 2 * 190
    assert counting.renders <= 2 + 9  # first try, all-dropped, then binary search over 200


# --- reasoning models ------------------------------------------------------------------------

# The parts of Qwen3's template that matter here: past turns lose their thinking (only turns
# after the last user message keep it), and enable_thinking=false writes an empty think block.
QWEN3_LIKE_TEMPLATE = (
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' and loop.last and m.reasoning_content %}"
    "{{- '<|im_start|>assistant\\n<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n'"
    " + m.content + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)
# A template that keeps every turn's reasoning in the prompt.
KEEPS_REASONING_TEMPLATE = (
    "{%- for m in messages %}{{- m.role + ': ' }}"
    "{%- if m.reasoning_content %}{{- '<think>' + m.reasoning_content + '</think>' }}{%- endif %}"
    "{{- m.content + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}assistant: {% endif %}"
)
# DeepSeek-R1 distills open the think block in the generation prompt.
R1_LIKE_TEMPLATE = (
    "{%- for m in messages %}{{- '<|' + m.role + '|>' + m.content }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|assistant|><think>\\n' }}{%- endif %}"
)


def _with_template(tok: Any, template: str) -> Any:
    other = copy.deepcopy(tok)
    other.chat_template = template
    return other


@pytest.fixture(scope="module")
def qwen3_tok(tok) -> Any:
    return _with_template(tok, QWEN3_LIKE_TEMPLATE)


def test_thinking_switch_reaches_the_template(qwen3_tok) -> None:
    turns = [user("Hi")]
    assert render_prompt(qwen3_tok, turns).endswith("<|im_start|>assistant\n")
    assert render_prompt(qwen3_tok, turns, thinking=True).endswith("<|im_start|>assistant\n")
    off = render_prompt(qwen3_tok, turns, thinking=False)
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert not opens_thinking(off)


def test_thinking_toggle_is_offered_only_where_the_template_reads_it(tok, qwen3_tok) -> None:
    assert supports_thinking_toggle(qwen3_tok)
    assert not supports_thinking_toggle(tok)
    assert not supports_thinking_toggle(_with_template(tok, R1_LIKE_TEMPLATE))


def test_past_reasoning_leaves_the_prompt_where_the_template_drops_it(tok, qwen3_tok) -> None:
    turns = [user("2+2?"), Message("assistant", "4", reasoning="two plus two"), user("3+3?")]
    assert "two plus two" not in render_prompt(qwen3_tok, turns)
    assert "two plus two" not in render_prompt(tok, turns)  # SmolLM2 knows no reasoning
    kept = render_prompt(_with_template(tok, KEEPS_REASONING_TEMPLATE), turns)
    assert "assistant: <think>two plus two</think>4\n" in kept


def test_continued_reply_keeps_its_own_reasoning(qwen3_tok) -> None:
    turns = [user("2+2?"), Message("assistant", "The answer", reasoning="two plus two")]
    text = render_prompt(qwen3_tok, turns, continue_last=True)
    assert text.endswith("<think>\ntwo plus two\n</think>\n\nThe answer")


def test_prompt_that_opens_thinking_is_detected(tok) -> None:
    r1 = _with_template(tok, R1_LIKE_TEMPLATE)
    fitted = fit_context(r1, [user("Hi")], context_window=512, reserve_tokens=16)
    assert opens_thinking(fitted.text)
    assert not opens_thinking(render_prompt(tok, [user("Hi")]))


def test_fit_context_passes_thinking_and_cleans_reasoning(qwen3_tok) -> None:
    turns = [user("Q"), Message("assistant", "A", reasoning="r\u200br")]
    fitted = fit_context(
        qwen3_tok, turns, context_window=512, reserve_tokens=16, continue_last=True
    )
    assert fitted.messages[-1].reasoning == "rr"
    off = fit_context(qwen3_tok, [user("Q")], context_window=512, reserve_tokens=16, thinking=False)
    assert off.text.endswith("</think>\n\n")
