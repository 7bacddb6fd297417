"""The official `openai` client's tool-calling examples, unchanged, against Hearth's server.

The server, its wire format, the engine thread, the chat template, the generation loop and the
tool parser are all real; only the model's reply is scripted (`tests.engine.support.scripted`): a
tiny random model never chooses to call a tool. The first turn answers with a Hermes call;
once a tool result is in the conversation, with text that quotes it.
"""

from __future__ import annotations

import json

import openai
import pytest

from engine.remote.backend import RemoteEngine
from engine.serve.server import serve_in_thread
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    Role,
    SamplingParams,
    ToolCallDelta,
    ToolSpec,
)
from tests.engine.support.scripted import ScriptedBackend
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

# As in OpenAI's function-calling guide.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "City and country e.g. Bogotá, Colombia",
                    }
                },
                "required": ["location"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
]


def reply(messages: tuple[Message, ...]) -> str:
    last = messages[-1]
    if last.role == Role.TOOL:
        return f"It is {json.loads(last.content)['celsius']} degrees in Paris."
    return (
        "<tool_call>\n"
        '{"name": "get_weather", "arguments": {"location": "Paris, France"}}\n</tool_call>'
    )


@pytest.fixture(scope="module")
def backend() -> ScriptedBackend:
    return ScriptedBackend(smollm2_tokenizer(), reply)


@pytest.fixture(scope="module")
def server(backend: ScriptedBackend):  # type: ignore[no-untyped-def]
    with serve_in_thread(backend) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]


def test_tool_call_then_result_round_trip(client: openai.OpenAI, backend: ScriptedBackend) -> None:
    completion = client.chat.completions.create(model="scripted", messages=ASK, tools=TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    tool_call = choice.message.tool_calls[0]
    assert tool_call.type == "function" and tool_call.id.startswith("call_")
    assert tool_call.function.name == "get_weather"
    assert json.loads(tool_call.function.arguments) == {"location": "Paris, France"}
    assert "Get current temperature" in backend.prompt()

    # The guide's next step: append the model's message and the tool's result, ask again.
    messages = [*ASK, choice.message]
    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": '{"celsius": 14}'})
    second = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It is 14 degrees in Paris."
    prompt = backend.prompt()
    assert '"arguments": {"location": "Paris, France"}' in prompt  # the call, re-rendered
    assert '<tool_response>\n{"celsius": 14}\n</tool_response>' in prompt


def test_streamed_tool_calls_arrive_as_openai_streams_them(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="scripted", messages=ASK, tools=TOOLS, stream=True
    )
    final_tool_calls = {}  # the guide's accumulation loop
    content, reasons = "", []
    for chunk in stream:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        reasons.append(chunk.choices[0].finish_reason)
        for tool_call in delta.tool_calls or []:
            index = tool_call.index
            if index not in final_tool_calls:
                final_tool_calls[index] = tool_call
                assert tool_call.id and tool_call.type == "function"
            else:
                final_tool_calls[index].function.arguments += tool_call.function.arguments
    assert content == ""
    assert reasons[-1] == "tool_calls"
    call = final_tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"location": "Paris, France"}


def test_tool_choice_forms_are_accepted(client: openai.OpenAI, backend: ScriptedBackend) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    for choice in ("auto", "required", named):
        done = client.chat.completions.create(
            model="scripted",
            messages=ASK,
            tools=TOOLS,
            tool_choice=choice,
            parallel_tool_calls=False,
        )
        assert done.choices[0].finish_reason == "tool_calls"
    assert "You must answer with a call to the function get_weather" in backend.prompt()
    plain = client.chat.completions.create(
        model="scripted", messages=ASK, tools=TOOLS, tool_choice="none"
    )
    assert plain.choices[0].finish_reason == "stop"
    assert "<tool_call>" in (plain.choices[0].message.content or "")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": [{"type": "function"}]}, "tools[0]"),
        ({"tools": [{"type": "function", "function": {"name": ""}}]}, "tools[0]"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        (
            {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice",
        ),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
        ({"tools": TOOLS + TOOLS}, "tools"),
    ],
)
def test_bad_tool_fields_get_a_400_naming_them(
    client: openai.OpenAI, fields: dict[str, object], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="scripted", messages=ASK, extra_body=fields)
    assert caught.value.body["param"] == param  # type: ignore[index]


def test_a_remote_endpoint_gets_the_same_tools_and_streams_calls_back(server) -> None:  # type: ignore[no-untyped-def]
    """RemoteEngine (the app's remote backend) against this server: tools go out as OpenAI
    fields, delta.tool_calls come back as ToolCallDeltas and Finished(TOOL_CALLS)."""
    function = TOOLS[0]["function"]
    spec = ToolSpec(function["name"], function["description"], json.dumps(function["parameters"]))
    remote = RemoteEngine(server.url, "scripted", kind="hearth")
    ask = GenerationRequest(
        messages=(Message("user", ASK[0]["content"]),),
        params=SamplingParams(temperature=0, max_new_tokens=100),
        tools=(spec,),
    )
    events = list(remote.generate(ask))
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason == FinishReason.TOOL_CALLS
    (call,) = finished.tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {
        "location": "Paris, France"
    }
    assert [d.index for d in events if isinstance(d, ToolCallDelta)] == [0, 0]
    answer = GenerationRequest(
        messages=(
            *ask.messages,
            Message("assistant", "", tool_calls=finished.tool_calls),
            Message("tool", '{"celsius": 9}', tool_call_id=call.id, name=call.name),
        ),
        params=ask.params,
        tools=(spec,),
    )
    done = list(remote.generate(answer))[-1]
    assert isinstance(done, Finished) and done.reason == FinishReason.STOP
    assert done.text == "It is 9 degrees in Paris."
    remote.close()
