"""Language and script of short questions: the fixed labelled set, and the rules' edges."""

from __future__ import annotations

import pytest

from bench.language import load_samples
from engine.safety.language import chinese_script, detect_language


def test_the_labelled_set_scores_as_docs_safety_says() -> None:
    samples = load_samples()
    wrong = [(label, text, detect_language(text).tag) for label, text in samples]
    wrong = [w for w in wrong if w[0] != w[2]]
    chinese = [w for w in wrong if w[0].startswith("zh")]
    assert chinese == []  # every Chinese line, Simplified or Traditional, mixed or not
    assert len(wrong) <= 2, (
        wrong
    )  # docs/safety.md: 119/120 (fastText reads "git rebase vs merge" as Turkish)


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("帮我debug这个Python函数", "zh-Hans"),
        ("幫我debug這個Python函數", "zh-Hant"),
        ("What does 謝謝 mean?", "en"),  # a Chinese word inside an English question
        ("LLM的context window是什么意思", "zh-Hans"),
        ("台北有什麼好玩的地方", "zh-Hant"),  # 台 is Taiwan's own form, not a Simplified one
        ("このPythonコードのバグを直して", "ja"),
        ("이 Python 코드의 버그를 고쳐줘", "ko"),
        ("翻译 `print('hello world, how are you today')`", "zh-Hans"),  # code is left out
    ],
)
def test_scripts_decide_chinese_japanese_and_korean(text: str, tag: str) -> None:
    assert detect_language(text).tag == tag


def test_no_letters_is_undetermined_and_neutral_chinese_defaults_to_simplified() -> None:
    assert detect_language("").tag == "und"
    assert detect_language("12345 ?!").tag == "und"
    assert chinese_script(list("你好")) == "zh-Hans"  # the same in both scripts
    assert detect_language("Comment installer Docker sur Linux ?").by == "model"
