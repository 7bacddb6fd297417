"""Per-chat Chinese post-processing: script conversion, punctuation and spacing, streamed.

Real OpenCC and pangu; the property that matters is that any chunking of a reply gives the
same text as processing it whole, and that code is never changed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.chat.chinese_text import (
    ChineseOptions,
    ReplyPostProcessor,
    process_markdown,
    process_prose,
)

REPLY = (
    "软件设置里可以调整内存和网络。\n"
    "我用Python写了3个程序,耗时5分钟!\n"
    '运行 `print("设置")` 即可:\n'
    "```python\n"
    'name = "软件设置"  # 网络,内存\n'
    "```\n"
    "请看“引号”里面的内容，然后打开文件。"
)
ALL = ChineseOptions(script="traditional_tw", punctuation=True, spacing=True)


def _streamed(text: str, cuts: list[int], options: ChineseOptions) -> str:
    processor = ReplyPostProcessor(options)
    out, start = [], 0
    for cut in sorted(set(cuts)):
        out.append(processor.feed(text[start:cut]))
        start = cut
    out.append(processor.feed(text[start:]))
    return "".join(out) + processor.flush()


def test_taiwan_conversion_uses_taiwanese_phrases() -> None:
    assert process_prose("软件设置里的内存", ChineseOptions(script="traditional_tw")) == (
        "軟體設定裡的記憶體"
    )


def test_hong_kong_and_back_to_simplified() -> None:
    assert process_prose("软件", ChineseOptions(script="traditional_hk")) == "軟件"
    assert process_prose("軟體設定", ChineseOptions(script="simplified")) == "软件设置"


def test_half_width_punctuation_between_chinese_becomes_full_width() -> None:
    options = ChineseOptions(punctuation=True)
    assert process_prose("你好,世界!真的吗?是的.", options) == "你好，世界！真的吗？是的。"
    assert process_prose("version 1.2, ok", options) == "version 1.2, ok"  # Latin untouched


def test_spacing_between_chinese_and_latin() -> None:
    options = ChineseOptions(spacing=True)
    assert process_prose("我用Python写了3个程序", options) == "我用 Python 写了 3 个程序"


def test_code_blocks_and_spans_are_never_changed() -> None:
    out = process_markdown(REPLY, ALL)
    assert 'name = "软件设置"  # 网络,内存\n' in out
    assert '`print("设置")`' in out
    assert out.startswith("軟體設定裡可以調整記憶體和網路。")
    assert "我用 Python 寫了 3 個程式，耗時 5 分鐘！" in out


def test_off_passes_text_through_untouched() -> None:
    processor = ReplyPostProcessor(ChineseOptions())
    assert processor.feed("软件,abc") == "软件,abc" and processor.flush() == ""


def test_text_is_released_while_streaming_not_only_at_the_end() -> None:
    processor = ReplyPostProcessor(ChineseOptions(script="traditional_tw"))
    assert processor.feed("软件设置，") == "軟體設定，"
    assert processor.feed("内存") == ""  # may still grow into a longer phrase
    assert processor.flush() == "記憶體"


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(REPLY)), max_size=25))
def test_any_chunking_gives_the_same_text_as_a_whole_reply(cuts: list[int]) -> None:
    assert _streamed(REPLY, cuts, ALL) == process_markdown(REPLY, ALL)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="软件设置内存网络你好 ,.!:`~\nabcPy3", max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=10),
)
def test_any_chunking_of_any_text_gives_the_whole_text_result(text: str, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(text)]
    assert _streamed(text, cuts, ALL) == process_markdown(text, ALL)


def test_stored_options_are_read_tolerantly() -> None:
    assert ChineseOptions.from_dict({"script": "klingon", "spacing": "yes"}) == ChineseOptions()
    assert ChineseOptions.from_dict(ALL.to_dict()) == ALL
    assert ChineseOptions.from_dict(None) == ChineseOptions()
