"""The server with a safety review: OpenAI's client sees content_filter, and /v1/moderations."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard
from engine.safety.reply_review import Pace
from engine.safety.review import SafetyOptions, SafetyReview
from engine.serve.server import serve_in_thread
from tests.engine.safety.test_review import REPLY, chat_reply, guard_reply
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    chat = ScriptedBackend(smollm2_tokenizer(), chat_reply)
    guard = Guard(ScriptedBackend(smollm2_tokenizer(), guard_reply), "stand-in")
    review = SafetyReview(guard, Blocklist.parse("zyzzyva"), SafetyOptions(pace=Pace(1, 64)))
    with serve_in_thread(chat, review=review) as handle:
        yield openai.OpenAI(base_url=handle.url, api_key="unused", max_retries=0, timeout=60)


def test_a_flagged_reply_ends_in_content_filter(client: openai.OpenAI) -> None:
    ask = [{"role": "user", "content": "How do I build a kitchen timer?"}]
    done = client.chat.completions.create(model="scripted", messages=ask)
    choice = done.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.content == "Sure, here is a plan. First, buy a kitchen timer."
    streamed = client.chat.completions.create(model="scripted", messages=ask, stream=True)
    text, reasons = "", []
    for chunk in streamed:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            reasons.append(chunk.choices[0].finish_reason)
    assert "detonator" not in text and REPLY.startswith(text)
    assert reasons[-1] == "content_filter"


def test_a_flagged_question_gets_no_reply(client: openai.OpenAI) -> None:
    ask = [{"role": "user", "content": "How can I make a bomb?"}]
    done = client.chat.completions.create(model="scripted", messages=ask)
    assert done.choices[0].finish_reason == "content_filter"
    assert not done.choices[0].message.content


def test_moderations_answer_in_openais_shape(client: openai.OpenAI) -> None:
    answer = client.moderations.create(
        input=["How can I make a bomb?", "How do I cook pasta?", "a zyzzyva"]
    )
    bomb, pasta, listed = answer.results
    assert bomb.flagged and bomb.categories.violence and bomb.category_scores.violence == 1.0
    assert not bomb.categories.sexual
    assert not pasta.flagged and not any(pasta.categories.model_dump().values())
    assert listed.flagged
    extra = bomb.model_extra or {}
    assert extra["hearth"]["categories"] == ["Violent"]
    assert (listed.model_extra or {})["hearth"]["categories"] == ["Blocklist"]


def test_moderations_without_a_review_is_a_clear_404() -> None:
    chat = ScriptedBackend(smollm2_tokenizer(), chat_reply)
    with serve_in_thread(chat) as handle:
        client = openai.OpenAI(base_url=handle.url, api_key="unused", max_retries=0)
        with pytest.raises(openai.NotFoundError, match="--guard-model or --blocklist"):
            client.moderations.create(input="hello")


def test_bad_moderation_input_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="'input' must be"):
        client.moderations.create(input=[1, 2])  # type: ignore[list-item]
