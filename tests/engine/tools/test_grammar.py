"""Structured output: JSON / JSON-schema replies and forced tool calls enforced at sampling time.

Runs the tiny random-weight engine (session fixture) at high temperature, where an
unconstrained reply is noise: only the grammar's token mask can make it valid JSON that matches
the schema. Then the official ``openai`` client's structured-output calls, unchanged, against
the local server on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import numpy as np
import openai
import pydantic
import pytest

from engine.errors import InvalidParamsError
from engine.sampling import make_generator, process_logits, sample_next_token
from engine.serve.server import serve_in_thread
from engine.tools.grammar import token_mask_for
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    ResponseFormat,
    SamplingParams,
    ToolSpec,
)

KEY = "grammar-test-key-7781"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "colour": {"enum": ["red", "green", "blue"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
        "home": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 10},
                "floor": {"type": "integer", "minimum": 0, "maximum": 99},
            },
            "required": ["city", "floor"],
            "additionalProperties": False,
        },
        "note": {"type": "string", "maxLength": 8},
    },
    "required": ["name", "age", "colour", "tags", "home"],
    "additionalProperties": False,
}
PROMPT = (Message("user", "Describe a person as JSON."),)


def test_the_mask_comes_before_every_filter() -> None:
    """Hand-made logits: the two best ids are forbidden, so greedy takes the third, and no draw
    under any filter (top-k 2 included: it ranks only what the grammar allows) leaves the mask."""
    logits = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0], dtype=np.float32)
    allowed = np.array([False, False, True, True, False, True])
    previous = np.array([2], dtype=np.int64)
    greedy = SamplingParams(temperature=0.0, repetition_penalty=2.0)
    assert sample_next_token(logits, greedy, previous, None, 0, allowed) == 3  # 3 / 2 < 2
    picky = SamplingParams(temperature=1.5, top_k=2, top_p=0.95, min_p=0.01, seed=0)
    rng = make_generator(0)
    drawn = {sample_next_token(logits, picky, previous, rng, 0, allowed) for _ in range(200)}
    assert drawn == {2, 3}
    processed = process_logits(logits, picky, previous, 0, allowed)
    assert not np.isfinite(processed[~allowed]).any()  # probability 0 outside the mask


def _spells(tokenizer: Any, request: GenerationRequest, prompt: str, text: str) -> bool:
    """Whether the grammar lets the reply be ``text`` exactly (each token allowed, then EOS)."""
    eos = tokenizer.eos_token_id
    mask = token_mask_for(tokenizer, request, {eos}, prompt)
    assert mask is not None
    for token in tokenizer.encode(text, add_special_tokens=False):
        if not bool(mask.allowed(len(tokenizer))[token]):
            return False
        mask.advance(token)
    return bool(mask.allowed(len(tokenizer))[eos])


def test_a_prompt_that_opens_thinking_gets_its_thinking_before_the_json(tiny_engine: Any) -> None:
    """R1 distills and QwQ end the prompt inside <think>: the reply closes it, then the JSON."""
    tokenizer = tiny_engine.tokenizer
    fmt = ResponseFormat(
        "json_schema",
        schema='{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}',
    )
    request = GenerationRequest(PROMPT, response_format=fmt)
    opened = "<|im_start|>assistant\n<think>\n"
    assert _spells(tokenizer, request, opened, 'Let me see {"a"}...\n</think>\n\n{"a": 1}')
    assert not _spells(tokenizer, request, opened, '{"a": 1}')  # that is thinking, not an answer
    assert _spells(tokenizer, request, "plain prompt", '{"a": 1}')
    assert not _spells(tokenizer, request, "plain prompt", '</think>{"a": 1}')


def _reply(engine: Any, request: GenerationRequest) -> Finished:
    events = list(engine.generate(request))
    finished = events[-1]
    assert isinstance(finished, Finished)
    return finished


def _schema_request(params: SamplingParams, schema: dict[str, Any] = SCHEMA) -> GenerationRequest:
    fmt = ResponseFormat("json_schema", schema=json.dumps(schema), name="person")
    return GenerationRequest(PROMPT, params, response_format=fmt)


@pytest.mark.parametrize(
    "params",
    [
        *(SamplingParams(temperature=2.0, seed=seed, max_new_tokens=160) for seed in range(4)),
        SamplingParams(temperature=0.0, max_new_tokens=160),  # greedy
        SamplingParams(  # every filter and penalty on
            temperature=1.5,
            top_k=20,
            top_p=0.9,
            min_p=0.05,
            repetition_penalty=1.3,
            presence_penalty=0.5,
            frequency_penalty=0.5,
            seed=9,
            max_new_tokens=160,
        ),
    ],
    ids=["seed0", "seed1", "seed2", "seed3", "greedy", "all-filters"],
)
def test_every_reply_is_json_that_matches_the_schema(
    tiny_engine: Any, params: SamplingParams
) -> None:
    finished = _reply(tiny_engine, _schema_request(params))
    assert finished.reason == FinishReason.STOP, finished.text
    jsonschema.validate(json.loads(finished.text), SCHEMA)


def test_unconstrained_the_same_sampling_is_not_json(tiny_engine: Any) -> None:
    """The control: the tiny model's own replies are noise, so the mask is what made them valid."""
    params = SamplingParams(temperature=2.0, seed=0, max_new_tokens=40)
    finished = _reply(tiny_engine, GenerationRequest(PROMPT, params))
    with pytest.raises(ValueError):
        json.loads(finished.text)


def test_json_object_mode_gives_an_object(tiny_engine: Any) -> None:
    params = SamplingParams(temperature=0.8, seed=3, max_new_tokens=200)
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer", "maximum": 9}},
        "required": ["a"],
        "additionalProperties": False,  # bounded for any seed (not only the old torch stream's)
    }
    # json_object alone may run long on a random model: the named field bounds it here.
    fmt = ResponseFormat("json_object")
    finished = _reply(tiny_engine, GenerationRequest(PROMPT, params, response_format=fmt))
    if finished.reason == FinishReason.STOP:
        assert isinstance(json.loads(finished.text), dict)
    else:  # a random model may not close a free object within max_tokens: a prefix of one
        assert finished.reason == FinishReason.LENGTH and finished.text.startswith("{")
    bounded = _reply(tiny_engine, _schema_request(params, schema))
    assert isinstance(json.loads(bounded.text), dict)


def test_max_tokens_mid_json_finishes_with_length(tiny_engine: Any) -> None:
    finished = _reply(
        tiny_engine, _schema_request(SamplingParams(temperature=1.0, seed=1, max_new_tokens=5))
    )
    assert finished.reason == FinishReason.LENGTH
    assert finished.text.startswith('{"name": "')


def test_a_forced_tool_call_is_a_parseable_call(tiny_engine: Any) -> None:
    weather = ToolSpec(
        "get_weather",
        "The weather in a city",
        json.dumps(
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 10},
                    "unit": {"enum": ["C", "F"]},
                },
                "required": ["city", "unit"],
            }
        ),
    )
    other = ToolSpec("get_time", "", '{"type": "object", "properties": {}}')
    params = SamplingParams(temperature=2.0, seed=5, max_new_tokens=120)
    request = GenerationRequest(PROMPT, params, tools=(other, weather), tool_choice="get_weather")
    finished = _reply(tiny_engine, request)
    assert finished.reason == FinishReason.TOOL_CALLS, finished.text
    (call,) = finished.tool_calls
    assert call.name == "get_weather"
    assert set(json.loads(call.arguments)) == {"city", "unit"}


@pytest.mark.parametrize(
    ("request_kw", "words"),
    [
        ({"response_format": ResponseFormat("json_schema", schema="{not json")}, "not valid JSON"),
        (
            {"response_format": ResponseFormat("json_schema", schema='{"type": "nonsense"}')},
            "schema",
        ),
        ({"tools": (ToolSpec("f"),), "tool_choice": "g"}, "'g'"),
    ],
    ids=["not-json", "bad-type", "unknown-tool"],
)
def test_what_cannot_be_enforced_is_refused_before_any_event(
    tiny_engine: Any, request_kw: dict[str, Any], words: str
) -> None:
    request = GenerationRequest(PROMPT, SamplingParams(max_new_tokens=4), **request_kw)
    with pytest.raises(InvalidParamsError, match=words):
        next(iter(tiny_engine.generate(request)))


def test_beam_search_refuses_a_grammar(tiny_engine: Any) -> None:
    request = _schema_request(SamplingParams(num_beams=2, max_new_tokens=8))
    with pytest.raises(InvalidParamsError, match="num_beams"):
        next(iter(tiny_engine.generate(request)))


# ---- the official client against the local server --------------------------------------


@pytest.fixture(scope="module")
def client(tiny_engine: Any) -> Any:
    with serve_in_thread(tiny_engine, api_key=KEY) as handle:
        yield openai.OpenAI(base_url=handle.url, api_key=KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def model(client: openai.OpenAI) -> str:
    return client.models.list().data[0].id


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=12)
    age: int = pydantic.Field(ge=0, le=130)
    colour: str = pydantic.Field(json_schema_extra={"enum": ["red", "green", "blue"]})


def test_openai_create_with_a_json_schema(client: openai.OpenAI, model: str) -> None:
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "A person, please."}],
        temperature=1.5,
        seed=2,
        max_tokens=160,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": SCHEMA, "strict": True},
        },
    )
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content or ""), SCHEMA)


def test_openai_parse_with_a_pydantic_model(client: openai.OpenAI, model: str) -> None:
    reply = client.chat.completions.parse(
        model=model,
        messages=[{"role": "user", "content": "A person, please."}],
        temperature=1.5,
        seed=4,
        max_tokens=160,
        response_format=Person,
    )
    person = reply.choices[0].message.parsed
    assert isinstance(person, Person)
    assert person.colour in {"red", "green", "blue"}


def test_openai_json_object_streams_json(client: openai.OpenAI, model: str) -> None:
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "JSON please"}],
        temperature=0,
        max_tokens=60,
        stream=True,
        response_format={"type": "json_object"},
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text.startswith("{")


def test_an_invalid_schema_is_a_400_naming_the_field(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": "x"}],
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "bad",
                    "schema": {"type": "object", "required": "name"},
                    "strict": True,
                },
            },
        )
    assert "response_format.json_schema.schema" in str(caught.value)


def test_openai_forced_tool_call(client: openai.OpenAI, model: str) -> None:
    tools: Any = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "maxLength": 10}},
                    "required": ["city"],
                },
            },
        }
    ]
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        temperature=1.5,
        seed=6,
        max_tokens=80,
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert set(json.loads(call.function.arguments)) == {"city"}  # type: ignore[union-attr]


def test_a_remote_endpoint_gets_the_schema(client: openai.OpenAI, model: str) -> None:
    """The remote backend sends response_format on: here to the local server, which enforces it."""
    from engine.remote.backend import RemoteEngine

    remote = RemoteEngine(str(client.base_url).rstrip("/"), model, api_key=KEY)
    try:
        request = _schema_request(SamplingParams(temperature=2.0, seed=11, max_new_tokens=160))
        finished = list(remote.generate(request))[-1]
    finally:
        remote.close()
    assert isinstance(finished, Finished) and finished.reason == FinishReason.STOP
    jsonschema.validate(json.loads(finished.text), SCHEMA)
