"""Speculative decoding wired into the generate loop: same greedy and seeded tokens, a consistent
cache.

Real engines only: the tiny random Llama (shared session fixture) and, marked slow, the bundled
SmolLM2 on a rewrite prompt. Speculation is toggled per request through ``engine.speculative``
(the fixtures are built with it off, the default) and always switched back off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from engine.types import Finished, GenerationRequest, LiveParams, Message, SamplingParams, TextDelta

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=40)
# Repeats itself, so prompt lookup finds n-grams to draft from (the tiny model's greedy text
# also falls into loops, which drafts then copy).
COPY_PROMPT = "Copy this list twice: red, green, blue, red, green, blue, red, green, blue."
REWRITE_PROMPT = (
    "Rewrite this paragraph in formal English, keeping every fact: the meeting is on Monday "
    "at ten in room four. Bring the budget report and the list of new hires. We will talk "
    "about the office move and the new coffee machine."
)


@contextmanager
def speculating(engine: Any) -> Iterator[None]:
    engine.speculative = True
    try:
        yield
    finally:
        engine.speculative = False


def finish(engine: Any, request: GenerationRequest, **kw: Any) -> Finished:
    event = list(engine.generate(request, **kw))[-1]
    assert isinstance(event, Finished)
    return event


def drafted_forwards(engine: Any) -> int:
    """Multi-token extends after the prefill (the first call): verified drafts."""
    return sum(1 for n in engine.runner.extend_calls[1:] if n > 1)


# Greedy replies ending at varied points of a draft, and a seeded sampled one: the loop draws
# one uniform a token from a draft's rows as from plain steps'. (The random tiny model's text
# loops, so drafts come, only while sampling stays sharp: at 0.6 its draws wander and nothing
# repeats to draft from.)
REPLIES = [GREEDY.replace(max_new_tokens=n) for n in (37, 38, 39, 40)]
REPLIES.append(GREEDY.replace(temperature=0.3, seed=3, max_new_tokens=40))


@pytest.mark.parametrize("params", REPLIES, ids=["greedy37", "38", "39", "40", "sampled0.3"])
def test_speculative_replies_equal_plain_and_leave_the_same_cache(
    tiny_engine: Any, params: SamplingParams
) -> None:
    request = GenerationRequest((Message("user", COPY_PROMPT),), params, conversation_id="plain")
    plain = finish(tiny_engine, request)
    plain_cache = list(tiny_engine.runner.cached_ids)
    tiny_engine.runner.extend_calls = []  # opt in to counting forwards
    with speculating(tiny_engine):
        spec = finish(tiny_engine, replace(request, conversation_id="spec"))
    assert drafted_forwards(tiny_engine) > 0  # the verifier really drafted
    assert spec.token_ids == plain.token_ids and spec.text == plain.text
    assert spec.reason == plain.reason
    # No unverified draft is left behind: the cache holds exactly what the plain loop left.
    assert list(tiny_engine.runner.cached_ids) == plain_cache


def test_turn_two_after_a_speculative_turn_reuses_the_prefix(tiny_engine: Any) -> None:
    """Turn 2 reuses exactly as much of the cache as it does after a plain turn 1."""
    first = (Message("user", COPY_PROMPT),)

    def two_turns(conversation: str) -> tuple[Finished, Finished]:
        turn1 = finish(tiny_engine, GenerationRequest(first, GREEDY, conversation))
        second = (*first, Message("assistant", turn1.text), Message("user", "Once more."))
        return turn1, finish(tiny_engine, GenerationRequest(second, GREEDY, conversation))

    tiny_engine.runner.reset()  # both runs start from an empty cache
    plain1, plain2 = two_turns("turns-plain")
    tiny_engine.runner.reset()
    with speculating(tiny_engine):
        spec1, spec2 = two_turns("turns-spec")
    assert spec1.token_ids == plain1.token_ids and spec2.token_ids == plain2.token_ids
    # The template may re-tokenize the boundary of the reply, so compare with the plain run.
    assert spec2.stats.cached_prompt_tokens == plain2.stats.cached_prompt_tokens
    assert spec2.stats.cached_prompt_tokens >= spec1.stats.prompt_tokens - 2


def test_leaving_greedy_mid_reply_keeps_the_reply(tiny_engine: Any) -> None:
    """Live params: temperature moves off 0 after a few tokens; drafting goes on, same tokens."""

    def run(conversation: str) -> tuple[Finished, list[int]]:
        live = LiveParams(GREEDY.replace(seed=7))
        request = GenerationRequest((Message("user", COPY_PROMPT),), GREEDY, conversation)
        done, switched = None, False
        for event in tiny_engine.generate(request, live=live):
            if isinstance(event, TextDelta) and event.token_index >= 12 and not switched:
                live.set(GREEDY.replace(temperature=0.8, seed=7))
                switched = True
            done = event
        assert isinstance(done, Finished)
        return done, list(tiny_engine.runner.cached_ids)

    plain, plain_cache = run("live-plain")
    with speculating(tiny_engine):
        spec, spec_cache = run("live-spec")
    assert spec.token_ids == plain.token_ids
    assert spec_cache == plain_cache


@pytest.mark.slow
def test_bundled_rewrite_is_identical_with_speculation(bundled_engine: Any) -> None:
    params = GREEDY.replace(max_new_tokens=64)
    request = GenerationRequest((Message("user", REWRITE_PROMPT),), params, "rewrite-plain")
    plain = finish(bundled_engine, request)
    bundled_engine.runner.extend_calls = []  # opt in to counting forwards
    with speculating(bundled_engine):
        spec = finish(bundled_engine, replace(request, conversation_id="rewrite-spec"))
    assert drafted_forwards(bundled_engine) > 0
    assert spec.text == plain.text and spec.token_ids == plain.token_ids
    assert len(bundled_engine.runner.extend_calls) < spec.stats.completion_tokens  # fewer forwards
