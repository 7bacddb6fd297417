"""A hostile or broken remote endpoint's stream (issue 12, row 11), kept as regressions, and a
property-based fuzz of the stream parser.

Every test talks real HTTP: `RemoteEngine` against a raw socket server on 127.0.0.1 that
answers with the exact bytes under test. The property for any stream: the reply ends in one
`Finished`, the text shown is the text kept, and an error is a sentence about the endpoint,
never Python's own error text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import EngineError
from engine.remote.backend import RemoteEngine
from engine.types import Finished, FinishReason, GenerationRequest, Message, TextDelta
from tests.engine.support.served import CannedServer, sse_reply

ASK = GenerationRequest(messages=(Message("user", "Hi"),))
# What leaks when an exception's own text reaches the user instead of a sentence about the data.
PYTHON_ERROR = re.compile(
    r"Traceback|has no attribute|KeyError|TypeError|ValueError|not subscriptable|unhashable"
    r"|invalid literal|object is not|argument must be"
)


def data(chunk: Any) -> str:
    return f"data: {json.dumps(chunk)}\n\n"


def text_chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


STOP = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def reply_to(*events: str) -> list[Any]:
    with CannedServer(sse_reply(*events)) as canned:
        engine = RemoteEngine(canned.url, "m")
        try:
            return list(engine.generate(ASK))
        finally:
            engine.close()


def check_reply(events: list[Any]) -> Finished:
    """One `Finished`, last; the text streamed is the text kept; errors are sentences."""
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert not any(isinstance(e, Finished) for e in events[:-1])
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert finished.text == streamed
    if finished.reason == FinishReason.ERROR:
        assert finished.error and not PYTHON_ERROR.search(finished.error), finished.error
    else:
        assert finished.error is None
    stats = finished.stats
    assert stats.prompt_tokens >= 0 and stats.completion_tokens >= 0
    return finished


def test_a_delta_sent_as_a_string_ends_with_a_clear_error_and_keeps_the_text() -> None:
    bad = {"choices": [{"index": 0, "delta": "oops", "finish_reason": None}]}
    finished = check_reply(reply_to(data(text_chunk("Hello")), data(bad), "data: [DONE]\n\n"))
    assert finished.reason == FinishReason.ERROR and finished.text == "Hello"
    assert "choices[0].delta must be an object, got a string" in (finished.error or "")


def test_content_sent_as_a_number_is_a_clear_error() -> None:
    bad = {"choices": [{"index": 0, "delta": {"content": 42}}]}
    finished = check_reply(reply_to(data(bad)))
    assert finished.reason == FinishReason.ERROR
    assert "choices[0].delta.content must be a string" in (finished.error or "")


def test_choices_sent_as_an_object_is_a_clear_error() -> None:
    finished = check_reply(reply_to(data({"choices": {"0": {}}})))
    assert finished.reason == FinishReason.ERROR
    assert "choices must be an array" in (finished.error or "")


def test_non_numeric_usage_does_not_mark_a_finished_reply_as_error() -> None:
    usage = {
        "prompt_tokens": "x",
        "completion_tokens": [1],
        "total_tokens": None,
        "prompt_tokens_details": "none",
    }
    events = reply_to(
        data(text_chunk("Hi")),
        data(text_chunk(" there")),
        data(STOP),
        data({"choices": [], "usage": usage}),
        "data: [DONE]\n\n",
    )
    finished = check_reply(events)
    assert finished.reason == FinishReason.STOP and finished.text == "Hi there"
    assert finished.stats.completion_tokens == 2  # counted, since the usage said nothing usable
    assert finished.stats.prompt_tokens == 0


def test_a_usage_block_that_is_not_an_object_is_ignored() -> None:
    events = reply_to(data(text_chunk("Ok")), data({**STOP, "usage": "lots"}), "data: [DONE]\n\n")
    assert check_reply(events).reason == FinishReason.STOP


def test_harmless_extra_fields_are_ignored() -> None:
    extra = text_chunk("Yes")
    extra.update(error=None, system_fingerprint={"x": [1]}, usage=None)
    extra["choices"][0].update(logprobs={"content": []}, matched_stop=7)
    extra["choices"][0]["delta"].update(role="assistant", tool_calls=None)
    finished = check_reply(reply_to(data(extra), data(STOP), "data: [DONE]\n\n"))
    assert finished.reason == FinishReason.STOP and finished.text == "Yes"


def test_a_chunk_nested_100k_deep_is_malformed_data_not_a_crash() -> None:
    deep = "data: " + "[" * 100_000 + "]" * 100_000 + "\n\n"
    finished = check_reply(reply_to(data(text_chunk("A")), deep))
    assert finished.reason == FinishReason.ERROR and "malformed" in (finished.error or "")


# ---- fuzz -----------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_usage_keys = st.sampled_from(["prompt_tokens", "completion_tokens", "prompt_tokens_details"])
_anything_or_absent = st.one_of(
    st.just("<absent>"), _json, st.dictionaries(_usage_keys, _json, max_size=3)
)


@st.composite
def _chunks(draw: st.DrawFn) -> Any:
    """Chunks shaped like the real thing, with any field swapped for any JSON value."""
    delta = {"content": draw(st.one_of(st.text(max_size=6), _json))}
    choice = {"index": 0, "delta": draw(st.one_of(st.just(delta), _json))}
    choice["finish_reason"] = draw(st.sampled_from([None, "stop", "length", 3, ["stop"]]))
    chunk = {"choices": draw(st.one_of(st.just([choice]), _json))}
    usage = draw(_anything_or_absent)
    if usage != "<absent>":
        chunk["usage"] = usage
    error = draw(st.sampled_from(["<absent>"] * 4 + [None, "", {"message": "boom"}, ["x"]]))
    if error != "<absent>":
        chunk["error"] = error
    return draw(st.one_of(st.just(chunk), _json))


_line = st.one_of(
    _chunks().map(lambda c: f"data: {json.dumps(c)}"),
    # No lone surrogates (category Cs): they have no UTF-8 form, so no server can send one.
    st.text(
        alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
        max_size=20,
    ),
    st.sampled_from(["data: [DONE]", ": keep-alive", "event: ping", "data:", "retry: 10"]),
)


def test_any_stream_gives_a_valid_reply_or_a_clear_error() -> None:
    with CannedServer(b"") as canned:
        engine = RemoteEngine(canned.url, "m")

        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(lines=st.lists(_line, max_size=6), blank=st.lists(st.booleans(), max_size=6))
        def check(lines: list[str], blank: list[bool]) -> None:
            # An event ends at a blank line; leave some out so data lines join into one event.
            body = "".join(
                line + ("\n\n" if i >= len(blank) or blank[i] else "\n")
                for i, line in enumerate(lines)
            )
            canned.reply = sse_reply(body)
            try:
                events = list(engine.generate(ASK))
            except EngineError as exc:  # allowed: a typed error with a sentence
                assert not PYTHON_ERROR.search(str(exc)), str(exc)
                return
            check_reply(events)

        try:
            check()
        finally:
            engine.close()
