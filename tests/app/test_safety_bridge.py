"""A chat's safety review through the real bridge: the engine thread runs the review, the guard
opens there beside the chat model, and a guard that does not open is a guard that is down."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.bridge import EngineBridge, Failed
from app.chat.safety_config import SafetyConfig
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    SamplingParams,
    TextDelta,
)
from tests.engine.safety.test_review import REPLY, chat_reply
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

ASK = GenerationRequest(
    (Message("user", "How do I build a kitchen timer?"),), SamplingParams(temperature=0.0)
)


@pytest.fixture
def bridge() -> Iterator[EngineBridge]:
    b = EngineBridge()
    b.attach(ScriptedBackend(smollm2_tokenizer(), chat_reply))
    yield b
    b.close_blocking()


async def collect(bridge: EngineBridge, safety: SafetyConfig | None) -> list[Any]:
    return [e async for e in bridge.stream(ASK, threading.Event(), None, safety)]


def test_a_blocklisted_reply_is_stopped_before_the_word(bridge: EngineBridge, run: Any) -> None:
    events = run(collect(bridge, SafetyConfig(enabled=True, blocklist="detonator")))
    finished = events[-1]
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert isinstance(finished, Finished) and finished.reason == FinishReason.CONTENT_FILTER
    assert "detonator" not in shown and finished.safety is not None
    assert finished.safety.category == "Blocklist"


def test_without_a_config_the_reply_is_untouched(bridge: EngineBridge, run: Any) -> None:
    events = run(collect(bridge, None))
    assert events[-1].reason == FinishReason.STOP and events[-1].text == REPLY


def test_a_guard_file_that_does_not_open_is_down(
    bridge: EngineBridge, run: Any, tmp_path: Path
) -> None:
    missing = str(tmp_path / "qwen3guard.gguf")
    lenient = run(collect(bridge, SafetyConfig(enabled=True, guard_model=missing)))
    assert lenient[-1].reason == FinishReason.STOP and lenient[-1].text == REPLY
    assert lenient[-1].safety.safety == "Unreviewed"
    assert "could not be opened" in lenient[-1].safety.error
    required = SafetyConfig(enabled=True, guard_model=missing, required=True)
    strict = run(collect(bridge, required))
    assert strict[-1].reason == FinishReason.ERROR and strict[-1].text == ""


def test_a_bad_blocklist_fails_the_reply_with_one_line(bridge: EngineBridge, run: Any) -> None:
    events = run(collect(bridge, SafetyConfig(enabled=True, blocklist="re:(a+)+$")))
    assert isinstance(events[-1], Failed) and "too slow" in str(events[-1].error)


def test_a_chat_follows_the_preferences_unless_it_chose() -> None:
    config = SafetyConfig(enabled=True, blocklist="bomb")
    assert config.for_chat("default") is not None and config.for_chat("off") is None
    off = SafetyConfig(enabled=False, blocklist="bomb")
    assert off.for_chat("default") is None and off.for_chat("on") is not None
    assert SafetyConfig(enabled=True).for_chat("on") is None  # nothing to review with
    assert SafetyConfig.from_dict({"enabled": "yes", "blocklist": 3}) == SafetyConfig()
    assert SafetyConfig.from_dict(config.to_dict()) == config
