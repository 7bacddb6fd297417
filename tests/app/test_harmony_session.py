"""gpt-oss (harmony) replies in a chat: the real bridge, session and SQLite store, fed by the
real generation loop on a harmony tokenizer built from a GGUF's metadata (the "model" scripts
its next token; see tests/engine/loop/test_harmony.py). The analysis channel becomes the Thinking
section, the final channel the answer, and the next prompt leaves the past thinking out; a
reply cut off in its thinking, continued, goes on thinking and then answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.store import Store
from engine.text import render_prompt
from engine.types import Event, GenerationRequest, LiveParams, SamplingParams
from tests.app.conftest import close_session, make_session
from tests.engine.loop.test_harmony import REPLY, HarmonyBackend, build_harmony_tokenizer

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=64, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def harmony_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_harmony_tokenizer(tmp_path_factory.mktemp("harmony"))


class Recording(HarmonyBackend):
    def __init__(self, tokenizer: Any, script: list[int]) -> None:
        super().__init__(tokenizer, script)
        self.requests: list[GenerationRequest] = []

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        self.requests.append(request)
        yield from super().generate(request, cancel, live)


def test_gpt_oss_thinking_fills_the_thinking_section_and_stays_out_of_the_next_prompt(
    run: Any,
    harmony_tokenizer: Any,
    tmp_path: Path,
) -> None:
    backend = Recording(harmony_tokenizer, harmony_tokenizer.encode(REPLY))
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    try:
        session.set_params(GREEDY)
        run(session.send("Hi"))
        item = session.messages.item(1)
        assert item.record.reasoning == "The user greets me; answer kindly, 简短."
        assert item.record.content == "Hello! Nice to meet you 😊"
        assert item.record.reasoning_seconds is not None
        stored = session.db.call_blocking(Store.branch, session.conversation_id)[1]
        assert (stored.reasoning, stored.content) == (item.record.reasoning, item.record.content)
        run(session.send("Again"))
        past = backend.requests[-1].messages[1]
        assert past.reasoning == item.record.reasoning  # travels apart; the template decides
        prompt = render_prompt(harmony_tokenizer, backend.requests[-1].messages)
        assert "greets" not in prompt and "Nice to meet you" in prompt
    finally:
        close_session(session)


def test_continuing_a_reply_cut_off_in_its_thinking_goes_on_thinking_then_answers(
    run: Any, harmony_tokenizer: Any, tmp_path: Path
) -> None:
    backend = Recording(harmony_tokenizer, harmony_tokenizer.encode(REPLY))
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    try:
        session.set_params(replace(GREEDY, max_new_tokens=8))
        run(session.send("Hi"))
        item = session.messages.item(1)
        full = "The user greets me; answer kindly, 简短."
        assert (
            item.record.reasoning
            and full.startswith(item.record.reasoning)
            and item.record.content == ""
        )
        rest = full[len(item.record.reasoning) :]
        backend.script = harmony_tokenizer.encode(
            f"{rest}<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"
        )
        session.set_params(GREEDY)
        run(session.continue_reply(item.id))
        assert (item.record.reasoning, item.record.content) == (full, "Hello!")
        prompt = render_prompt(harmony_tokenizer, backend.requests[-1].messages, continue_last=True)
        assert prompt.endswith(f"<|channel|>analysis<|message|>{full[: -len(rest)]}")
    finally:
        close_session(session)


def test_thinking_sent_apart_is_coalesced_saved_while_streaming_and_kept_in_order(
    qapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.chat import reply_run
    from app.chat.reply_run import ReplyRun
    from app.listmodels.messages import MessageItem
    from engine.types import ReasoningDelta, TextDelta

    clock = iter(i / 100 for i in range(10_000))
    monkeypatch.setattr(reply_run.time, "monotonic", lambda: next(clock))  # 10 ms per call
    touched: list[str] = []
    saved: list[tuple[str, str]] = []
    item = MessageItem.of("r", "assistant", "")
    run = ReplyRun(
        item,
        lambda i: touched.append(i.record.reasoning),
        lambda i: saved.append((i.record.reasoning, i.record.content)),
    )
    for i in range(200):
        run.on_event(ReasoningDelta(f"t{i} ", i + 1))
    run.on_event(TextDelta("Answer", 201))
    run.on_event(ReasoningDelta(" late", 202))
    run.conclude()
    assert item.record.reasoning == "".join(f"t{i} " for i in range(200)) + " late"
    assert item.record.content == "Answer"
    assert len(touched) < 150  # coalesced, not one row update per token
    assert saved and saved[0][0] and not saved[0][1]  # the thinking was saved before the answer
