"""Curly quotes become corner brackets in Traditional replies (or when asked), streamed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.chat.chinese_text import ChineseOptions, ReplyPostProcessor, process_markdown

TAIWAN = ChineseOptions(script="traditional_tw")


def streamed(text: str, cuts: list[int], options: ChineseOptions) -> str:
    processor = ReplyPostProcessor(options)
    out, start = [], 0
    for cut in sorted(set(cuts)):
        out.append(processor.feed(text[start:cut]))
        start = cut
    return "".join(out) + processor.feed(text[start:]) + processor.flush()


def test_traditional_replies_get_corner_brackets_nested_by_depth() -> None:
    assert process_markdown("他说：“这是‘一个’例子”。", TAIWAN) == "他說：「這是『一個』例子」。"
    hong_kong = ChineseOptions(script="traditional_hk")
    assert process_markdown("“好”", hong_kong) == "「好」"


def test_the_option_turns_them_on_without_converting_the_script() -> None:
    assert process_markdown("请看“引号”", ChineseOptions(quotes=True)) == "请看「引号」"
    assert process_markdown("请看“引号”", ChineseOptions(punctuation=True)) == "请看“引号”"
    assert process_markdown("请看“引号”", ChineseOptions(script="simplified")) == "请看“引号”"


def test_apostrophes_and_english_quotes_stay() -> None:
    text = "他说“好”。He said “don’t” and the students’ books. 学生们“OK”"
    assert process_markdown(text, ChineseOptions(quotes=True)) == (
        "他说「好」。He said “don’t” and the students’ books. 学生们「OK」"
    )


def test_code_is_untouched() -> None:
    text = "看“`print(“x”)`”\n```\ns = “不变”\n```\n他说“好”"
    assert process_markdown(text, ChineseOptions(quotes=True)) == (
        "看「`print(“x”)`」\n```\ns = “不变”\n```\n他说「好」"
    )


def test_pairs_match_across_deltas_one_character_at_a_time() -> None:
    text = "他说：“这是‘一个’例子”，好吗？"
    processor = ReplyPostProcessor(TAIWAN)
    out = "".join(processor.feed(c) for c in text) + processor.flush()
    assert out == "他說：「這是『一個』例子」，好嗎？"


def test_stored_options_keep_the_quotes_choice() -> None:
    options = ChineseOptions(quotes=True)
    assert ChineseOptions.from_dict(options.to_dict()) == options
    assert ChineseOptions.from_dict({"script": "off"}).quotes is False


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet='他说好 “”‘’`\nab,."#，', max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=10),
)
def test_any_chunking_gives_the_whole_reply_result(text: str, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(text)]
    options = ChineseOptions(script="traditional_tw", punctuation=True, spacing=True)
    assert streamed(text, cuts, options) == process_markdown(text, options)


def test_the_box_offers_the_quotes_choice(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.views.dialogs.chinese_options import ChineseOptionsBox

    box = ChineseOptionsBox()
    qtbot.addWidget(box)
    with qtbot.waitSignal(box.sig_options_changed) as changed:
        box.quotes.setChecked(True)
    assert changed.args[0] == ChineseOptions(quotes=True)
    box.set_options(ChineseOptions(script="traditional_hk"))
    assert not box.quotes.isChecked() and box.options().corner_quotes
