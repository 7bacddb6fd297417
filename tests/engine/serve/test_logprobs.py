"""Log probabilities from the local server, read by the official ``openai`` client.

The tiny random engine from the session fixture answers greedily, so the chosen token is the
likeliest: its logprob must equal the first alternative's, and the alternatives must come in
order with probabilities that sum to at most 1.
"""

from __future__ import annotations

import math

import numpy as np
import openai
import pytest

from engine.sampling import token_logprobs
from engine.serve.server import serve_in_thread
from tests.engine.support.wrapping import WrappingBackend


@pytest.fixture(scope="module")
def client(tiny_engine):  # type: ignore[no-untyped-def]
    with serve_in_thread(WrappingBackend(tiny_engine)) as handle:
        yield openai.OpenAI(base_url=handle.url, api_key="x", max_retries=0, timeout=120)


def _ask(client: openai.OpenAI, **kw):  # type: ignore[no-untyped-def]
    return client.chat.completions.create(
        model=client.models.list().data[0].id,
        messages=[{"role": "user", "content": "Count to five"}],
        temperature=0,
        max_tokens=8,
        **kw,
    )


def _check_greedy(entries) -> None:  # type: ignore[no-untyped-def]
    for entry in entries:
        top = entry.top_logprobs
        assert len(top) == 3
        assert [t.logprob for t in top] == sorted((t.logprob for t in top), reverse=True)
        assert entry.token == top[0].token and entry.logprob == pytest.approx(top[0].logprob)
        assert sum(math.exp(t.logprob) for t in top) <= 1 + 1e-6
        assert entry.bytes == list(entry.token.encode("utf-8"))


def test_a_whole_reply_carries_a_logprob_per_token(client: openai.OpenAI) -> None:
    reply = _ask(client, logprobs=True, top_logprobs=3)
    choice = reply.choices[0]
    entries = choice.logprobs.content
    assert choice.finish_reason == "length"  # 8 tokens, no EOS: one entry per token
    assert len(entries) == reply.usage.completion_tokens == 8
    _check_greedy(entries)
    assert "".join(e.token for e in entries) == choice.message.content


def test_streamed_logprobs_equal_the_whole_reply(client: openai.OpenAI) -> None:
    whole = _ask(client, logprobs=True, top_logprobs=3).choices[0].logprobs.content
    streamed = []
    for chunk in _ask(client, logprobs=True, top_logprobs=3, stream=True):
        if chunk.choices and chunk.choices[0].logprobs:
            streamed.extend(chunk.choices[0].logprobs.content)
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in whole]
    _check_greedy(streamed)


def test_no_logprobs_unless_asked(client: openai.OpenAI) -> None:
    assert _ask(client).choices[0].logprobs is None
    only_chosen = _ask(client, logprobs=True).choices[0].logprobs.content
    assert only_chosen and all(e.top_logprobs == [] for e in only_chosen)


def test_the_legacy_completions_shape(client: openai.OpenAI) -> None:
    reply = client.completions.create(
        model=client.models.list().data[0].id,
        prompt="Once upon",
        temperature=0,
        max_tokens=6,
        logprobs=2,
    )
    lp = reply.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    assert lp.text_offset[0] == 0 and lp.text_offset[1] == len(lp.tokens[0])
    assert all(len(alternatives) == 2 for alternatives in lp.top_logprobs)


def test_token_logprobs_is_a_normalised_log_softmax() -> None:
    logits = np.array([2.0, 1.0, 0.0, 1.0], dtype=np.float32)
    chosen, top = token_logprobs(logits, 1, 3)
    z = sum(math.exp(float(x)) for x in logits)
    assert chosen == pytest.approx(math.log(math.exp(1.0) / z))
    assert [i for i, _ in top] == [0, 1, 3]  # ties by lower id
    assert top[0][1] == pytest.approx(math.log(math.exp(2.0) / z))
