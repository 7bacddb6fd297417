"""Scripted model replies through each family's tool-call parser (engine.tools.parse).

Every reply is fed whole, one character at a time, and split in two at every position: the
result must be the same text and calls each way, no text piece may hold a partial marker, and
a call inside <think> or with malformed JSON stays text.
"""

from __future__ import annotations

import json

import pytest

from engine.harmony import HarmonySplitter
from engine.tools.parse import FAMILIES, ParsedCall, ToolCallParser
from engine.tools.stream import ToolStream, finish_reason
from engine.types import FinishReason, TextDelta, ToolCallDelta

WEATHER = ParsedCall("get_weather", json.dumps({"city": "Paris", "unit": "celsius"}))
TIME = ParsedCall("get_time", json.dumps({"zone": "Europe/Paris"}))

# (family, reply, expected text, expected calls)
CASES = [
    (
        "hermes",
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Paris", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n'
        '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}\n</tool_call>',
        "Let me check.\n\n",
        [WEATHER, TIME],
    ),
    (
        "hermes",  # Qwen3: thinking first; a call written while thinking is not a call
        '<think>I could write <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
        '</think>\n\n<tool_call>{"name": "get_weather", "arguments": '
        '{"city": "Paris", "unit": "celsius"}}</tool_call>',
        '<think>I could write <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
        "</think>\n\n",
        [WEATHER],
    ),
    (
        "hermes",  # malformed JSON: the text it was, markers included
        'Sure <tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call> ok',
        'Sure <tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call> ok',
        [],
    ),
    (
        "hermes",  # the reply stopped before </tool_call>: the complete JSON still counts
        '<tool_call>{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}',
        "",
        [TIME],
    ),
    ("hermes", "No tools needed: 2 < 3 and <tool is fine.", None, []),
    (
        "hermes",  # Qwen3-Coder / Qwen3.5: XML inside the tags
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>",
        "",
        [WEATHER],
    ),
    (
        "llama3",  # an end-of-message marker the decoder kept after the call
        '<|python_tag|>{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}<|eom_id|>',
        "",
        [TIME],
    ),
    (
        "llama3",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
        "",
        [WEATHER],
    ),
    (
        "llama3",  # a bare JSON reply, two calls separated by ';'
        '\n{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}; '
        '{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}',
        "",
        [WEATHER, TIME],
    ),
    ("llama3", '{"answer": 42}', '{"answer": 42}', []),
    (
        "mistral",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": '
        '"celsius"}}, {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]',
        "",
        [WEATHER, TIME],
    ),
    (
        "mistral",  # v11+: name[ARGS]{...}, one marker per call
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}'
        '[TOOL_CALLS]get_time[ARGS]{"zone": "Europe/Paris"}',
        "",
        [WEATHER, TIME],
    ),
    ("mistral", "[1, 2, 3] are numbers", "[1, 2, 3] are numbers", []),
    (
        "gemma4",
        'Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,unit:<|"|>celsius<|"|>}'
        '<tool_call|><|tool_call>call:get_time{zone:<|"|>Europe/Paris<|"|>}<tool_call|>',
        "Checking.",
        [WEATHER, TIME],
    ),
    (
        "gemma3",
        'I will call it.\n```tool_code\nget_weather(city="Paris", unit="celsius")\n```',
        "I will call it.\n",
        [WEATHER],
    ),
    (
        "gemma3",
        '```json\n{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}\n```',
        "",
        [TIME],
    ),
    ("gemma3", "```python\nprint(1)\n```", "```python\nprint(1)\n```", []),
]


def _run(family: str, chunks: list[str]) -> tuple[list[str], list[ParsedCall]]:
    parser = ToolCallParser(family)
    items = []
    for chunk in chunks:
        items += parser.feed(chunk)
    items += parser.finish()
    texts = [i for i in items if isinstance(i, str)]
    calls = [i for i in items if isinstance(i, ParsedCall)]
    assert "".join(texts) == parser.text and calls == parser.calls
    return texts, calls


@pytest.mark.parametrize(("family", "reply", "text", "calls"), CASES)
def test_every_split_gives_the_same_text_and_calls(
    family: str, reply: str, text: str | None, calls: list[ParsedCall]
) -> None:
    expected_text = reply if text is None else text
    splits = [[reply], list(reply)] + [[reply[:i], reply[i:]] for i in range(1, len(reply))]
    for chunks in splits:
        texts, got = _run(family, chunks)
        assert "".join(texts) == expected_text, chunks
        assert got == calls, chunks
        if calls:  # no piece of text shows the beginning of a call
            opens = [o for o, _ in FAMILIES[family].pairs]
            shown = "".join(texts).replace(expected_text, "")
            assert not any(o in shown for o in opens)


def test_a_partial_call_is_never_released_as_text() -> None:
    reply = 'Hi <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    parser = ToolCallParser("hermes")
    released = ""
    for ch in reply[:-5]:
        released += "".join(i for i in parser.feed(ch) if isinstance(i, str))
        assert "<" not in released
    assert released == "Hi "


def test_a_reply_that_opens_inside_think_keeps_calls_as_thinking() -> None:
    reply = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>done'
    parser = ToolCallParser("hermes", in_think=True)
    items = parser.feed(reply) + parser.finish()
    assert parser.calls == [] and "".join(i for i in items if isinstance(i, str)) == reply


def test_hostile_bodies_never_crash() -> None:
    for body in ("[" * 100_000, '{"name": 1}', '{"name": "x", "arguments": "not json"}', "\x00"):
        for family in (f for f in FAMILIES if FAMILIES[f].pairs):
            opens, close = FAMILIES[family].pairs[0]
            reply = opens + body + (close or "")
            texts, calls = _run(family, [reply])
            assert calls == [] and "".join(texts) == reply


def test_tool_stream_emits_id_and_name_then_arguments() -> None:
    stream = ToolStream("hermes")
    reply = (
        'A<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
        '</tool_call><tool_call>{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
        "</tool_call>"
    )
    events = [*stream.feed(reply, 1), *stream.finish(2)]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["A"]
    assert [(d.index, d.name, d.arguments) for d in deltas] == [
        (0, "get_weather", ""),
        (0, "", WEATHER.arguments),
        (1, "get_time", ""),
        (1, "", TIME.arguments),
    ]
    assert deltas[0].id.startswith("call_") and deltas[0].id != deltas[2].id
    assert deltas[1].id == ""
    assert [c.name for c in stream.calls] == ["get_weather", "get_time"]
    assert finish_reason(FinishReason.STOP, stream.calls) == FinishReason.TOOL_CALLS
    assert finish_reason(FinishReason.LENGTH, stream.calls) == FinishReason.LENGTH


def test_parallel_tool_calls_false_keeps_the_first_call() -> None:
    stream = ToolStream("hermes", parallel=False)
    reply = '<tool_call>{"name": "a", "arguments": {}}</tool_call>' * 3
    list(stream.feed(reply, 1))
    assert [c.name for c in stream.calls] == ["a"]


def test_harmony_commentary_calls_are_collected_not_shown() -> None:
    reply = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
        "commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Paris", "unit": "celsius"}<|call|>'
    )
    for chunks in ([reply], list(reply)):
        splitter = HarmonySplitter()
        shown = [p for c in chunks for p in splitter.feed(c)] + splitter.finish()
        assert splitter.calls == [("get_weather", '{"city": "Paris", "unit": "celsius"}')]
        assert shown == [("reasoning", "Need weather.")] or "".join(t for _, t in shown) == (
            "Need weather."
        )
        assert splitter.answer == ""


def test_a_call_cut_short_is_dropped_but_an_ended_malformed_one_is_text() -> None:
    partial = 'Checking <tool_call>{"name": "get_weather", "argum'
    for family in ("hermes", "gemma3"):
        cut = ToolCallParser(family)
        items = cut.feed(partial) + cut.finish(cut=True)
        assert items == ["Checking "] and cut.calls == []
        ended = ToolCallParser(family)
        assert "".join(map(str, ended.feed(partial) + ended.finish())) == partial
    fence = ToolCallParser("gemma3")  # an answer's code fence cut short stays the answer
    assert fence.feed("```json\n{") + fence.finish(cut=True) == ["```json\n{"]
