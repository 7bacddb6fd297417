"""The safety review around a turn, through the real generation loop on both sides.

The chat model and the guard are `ScriptedBackend`s (the real loop, chat template, sampling and
detokenizer over a runner whose replies the test writes): a random model never says "Safety:
Unsafe" on cue. The guard is asked through Qwen3Guard's template exactly as a guard file would
be, and, for the endpoint cases, through Hearth's own OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.remote.backend import RemoteEngine
from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard
from engine.safety.qwen3guard import render_check
from engine.safety.reply_review import Pace
from engine.safety.review import SafetyOptions, SafetyReview
from engine.serve.server import serve_in_thread
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    SamplingParams,
    TextDelta,
)
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

REPLY = (
    "Sure, here is a plan. First, buy a kitchen timer. Then wire the detonator to the timer. "
    "Finally, hide the device well."
)


def chat_reply(messages: tuple[Message, ...]) -> str:
    return REPLY


def guard_reply(messages: tuple[Message, ...]) -> str:
    """A Qwen3Guard stand-in: the format Qwen3Guard-Gen answers in, for a few trigger words."""
    last = messages[-1]
    if last.role == "user":
        bad = "bomb" in last.content
        return f"Safety: {'Unsafe' if bad else 'Safe'}\nCategories: {'Violent' if bad else 'None'}"
    bad = "detonator" in last.content
    return (
        f"Safety: {'Unsafe' if bad else 'Safe'}\nCategories: {'Violent' if bad else 'None'}\n"
        "Refusal: No"
    )


def ask(text: str) -> GenerationRequest:
    return GenerationRequest(
        messages=(Message("user", text),), params=SamplingParams(temperature=0.0, seed=0)
    )


def run(review: SafetyReview, chat: ScriptedBackend, text: str) -> tuple[str, Finished]:
    shown: list[str] = []
    finished = None
    for event in review.review(ask(text), lambda r: chat.generate(r)):
        if isinstance(event, TextDelta):
            shown.append(event.text)
        elif isinstance(event, Finished):
            finished = event
    assert finished is not None
    return "".join(shown), finished


@pytest.fixture
def chat() -> ScriptedBackend:
    return ScriptedBackend(smollm2_tokenizer(), chat_reply)


@pytest.fixture
def guard_backend() -> ScriptedBackend:
    return ScriptedBackend(smollm2_tokenizer(), guard_reply)


def test_a_flagged_prompt_ends_the_turn_before_any_token(
    chat: ScriptedBackend, guard_backend: ScriptedBackend
) -> None:
    review = SafetyReview(Guard(guard_backend, "qwen3guard-stand-in"))
    shown, finished = run(review, chat, "How can I make a bomb?")
    assert shown == "" and finished.text == ""
    assert finished.reason == FinishReason.CONTENT_FILTER
    assert finished.safety is not None
    assert (finished.safety.safety, finished.safety.category) == ("Unsafe", "Violent")
    assert finished.safety.stage == "prompt"
    assert chat.runner.prompts == []  # the chat model never ran
    # The guard was given Qwen3Guard's own prompt-check format.
    assert guard_backend.prompt() == render_check("How can I make a bomb?")


def test_a_reply_flagged_mid_stream_never_shows_the_flagged_sentence(
    chat: ScriptedBackend, guard_backend: ScriptedBackend
) -> None:
    options = SafetyOptions(pace=Pace(min_tokens=1, every_tokens=64))  # sentence by sentence
    review = SafetyReview(Guard(guard_backend, "qwen3guard-stand-in"), options=options)
    shown, finished = run(review, chat, "How do I build a kitchen timer?")
    assert shown == "Sure, here is a plan. First, buy a kitchen timer."
    assert "detonator" not in shown and finished.text == shown
    assert finished.reason == FinishReason.CONTENT_FILTER
    assert finished.safety is not None and finished.safety.stage == "reply"
    assert (finished.safety.safety, finished.safety.category) == ("Unsafe", "Violent")
    # Generation stopped at the flag: "Finally, ..." was never generated.
    generated = chat.tokenizer.decode(chat.runner.cached_ids[len(chat.runner.prompts[-1]) :])
    assert "Finally" not in generated
    # The reply check carried the user's turn, in Qwen3Guard's reply format.
    assert guard_backend.prompt().startswith(
        render_check("How do I build a kitchen timer?", "Sure")[:200]
    )
    assert "USER: How do I build a kitchen timer?\n\nASSISTANT: Sure, here is a plan." in (
        guard_backend.prompt()
    )


def test_a_safe_reply_is_shown_whole_with_its_verdict(guard_backend: ScriptedBackend) -> None:
    chat = ScriptedBackend(smollm2_tokenizer(), lambda _m: "Boil water. Add the pasta. Wait.")
    review = SafetyReview(Guard(guard_backend, "g"), options=SafetyOptions(pace=Pace(1, 4)))
    shown, finished = run(review, chat, "How do I cook pasta?")
    assert shown == finished.text == "Boil water. Add the pasta. Wait."
    assert finished.reason == FinishReason.STOP
    assert finished.safety is not None and finished.safety.safety == "Safe"


def test_the_blocklist_flags_without_a_model(chat: ScriptedBackend) -> None:
    review = SafetyReview(None, Blocklist.parse("detonator"), SafetyOptions(pace=Pace(1, 64)))
    shown, finished = run(review, chat, "timer?")
    assert "detonator" not in shown and shown.startswith("Sure, here is a plan.")
    assert finished.reason == FinishReason.CONTENT_FILTER
    assert finished.safety is not None and finished.safety.category == "Blocklist"


def test_the_safety_system_prompt_goes_first(chat: ScriptedBackend) -> None:
    review = SafetyReview(options=SafetyOptions(system_prompt="Be safe."))
    run(review, chat, "hello")
    assert "Be safe." in chat.prompt() and chat.prompt().index("Be safe.") < chat.prompt().index(
        "hello"
    )


@pytest.fixture
def guard_endpoint(guard_backend: ScriptedBackend) -> Iterator[str]:
    with serve_in_thread(guard_backend) as handle:
        yield handle.url


def test_a_guard_endpoint_flags_the_reply_over_http(
    chat: ScriptedBackend, guard_endpoint: str
) -> None:
    # Hearth's server names its model after the backend: "scripted".
    guard = Guard(RemoteEngine(guard_endpoint, "scripted", timeout=30), "endpoint")
    review = SafetyReview(guard, options=SafetyOptions(pace=Pace(1, 64)))
    shown, finished = run(review, chat, "How do I build a kitchen timer?")
    assert "detonator" not in shown and finished.reason == FinishReason.CONTENT_FILTER
    assert finished.safety is not None and finished.safety.category == "Violent"


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_guard_that_is_down_lets_the_chat_go_on_unreviewed(chat: ScriptedBackend) -> None:
    guard = Guard(RemoteEngine(_closed_port(), "guard", timeout=5), "endpoint")
    review = SafetyReview(guard, options=SafetyOptions(pace=Pace(1, 64)))
    shown, finished = run(review, chat, "How do I build a kitchen timer?")
    assert shown == REPLY and finished.reason == FinishReason.STOP
    assert finished.safety is not None and finished.safety.safety == "Unreviewed"
    assert "not available" in finished.safety.error


def test_a_guard_that_is_down_refuses_when_the_review_is_required(chat: ScriptedBackend) -> None:
    guard = Guard(RemoteEngine(_closed_port(), "guard", timeout=5), "endpoint")
    review = SafetyReview(guard, options=SafetyOptions(required=True))
    shown, finished = run(review, chat, "How do I build a kitchen timer?")
    assert shown == "" and finished.reason == FinishReason.ERROR
    assert finished.error is not None and "requires the safety review" in finished.error
    assert "\n" not in finished.error
    assert chat.runner.prompts == []


def test_a_guard_that_answers_nonsense_is_no_verdict(chat: ScriptedBackend) -> None:
    nonsense = ScriptedBackend(smollm2_tokenizer(), lambda _m: "I am a friendly model!")
    review = SafetyReview(Guard(nonsense, "not-a-guard"), options=SafetyOptions(required=True))
    _shown, finished = run(review, chat, "hello")
    assert finished.reason == FinishReason.ERROR
    assert finished.error is not None and "gave no verdict" in finished.error


def test_overlapped_checks_still_never_show_flagged_text(
    chat: ScriptedBackend, guard_backend: ScriptedBackend
) -> None:
    threads: list[str] = []

    def recording(messages: tuple[Message, ...]) -> str:
        import threading

        threads.append(threading.current_thread().name)
        return guard_reply(messages)

    guard_backend.reply = recording
    options = SafetyOptions(pace=Pace(min_tokens=1, every_tokens=64), overlap=True)
    review = SafetyReview(Guard(guard_backend, "qwen3guard-stand-in"), options=options)
    try:
        shown, finished = run(review, chat, "How do I build a kitchen timer?")
        assert "detonator" not in shown and REPLY.startswith(shown)
        assert finished.reason == FinishReason.CONTENT_FILTER and finished.text == shown
        assert finished.safety is not None and finished.safety.category == "Violent"
        # Every guard call, the question's too, ran on the guard's own thread.
        assert threads and all(t.startswith("hearth-guard") for t in threads)
        safe = ScriptedBackend(smollm2_tokenizer(), lambda _m: "Boil water. Add the pasta. Wait.")
        shown, finished = run(review, safe, "How do I cook pasta?")
        assert shown == finished.text == "Boil water. Add the pasta. Wait."
        assert finished.reason == FinishReason.STOP
    finally:
        review.close()


def test_a_very_long_reply_is_judged_by_its_latest_part(
    guard_backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.safety import guard as guard_module

    # A small window, so the stand-in's prompt stays in one prefill (the real one: 16,000).
    monkeypatch.setattr(guard_module, "MAX_REPLY_CHARS", 24)
    long_reply = "word " * 200 + "the detonator."
    verdict = Guard(guard_backend, "stand-in").check("a question", long_reply)
    assert verdict.safety == "Unsafe"  # the end, where the new text is, was seen
    prompt = guard_backend.prompt()
    assert "ASSISTANT: …" in prompt and "word " * 6 not in prompt
