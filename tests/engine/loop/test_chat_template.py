"""`engine.chat_template` renders byte-identically to transformers' ``apply_chat_template``.

Reference: transformers' own tokenizer over the same files (TokenizersBackend), rendering the
same template with the same arguments. Templates: the bundled SmolLM2 template, templates
written for this test in the style of each family we run (Qwen 2.5/3/3.5, Llama 3, Gemma 3/4,
Phi, gpt-oss, Mistral), using the Jinja features those families use (namespace, reversed
slices, macros, tojson with options, raise_exception, strftime_now, loop controls, the
generation block), and, where ``HEARTH_TEMPLATE_DIR`` names a folder of real ``*.jinja``
templates (say llama.cpp's models/templates), each of those too.
"""

# ruff: noqa: E501 (the templates are data, in the long lines templates have)

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.tokenizer_runtime import EngineTokenizer
from tests.engine.support.tokenizer_fixture import bundled_gguf

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather <today> & tomorrow",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "days": {"type": "integer", "default": 1},
                },
                "required": ["city"],
            },
        },
    }
]
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}
CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    "one turn": [{"role": "user", "content": "Hi 你好 <b>&</b>"}],
    "system and turns": [
        {"role": "system", "content": "  Be brief.  "},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 👨‍👩‍👧?\n\n  indented"},
    ],
    "reasoning": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "Done.", "reasoning_content": "Let me see."},
        {"role": "user", "content": "Again."},
    ],
    "tool round": [
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL], "reasoning_content": None},
        {"role": "tool", "content": '{"temp": 21}', "name": "get_weather"},
        {"role": "user", "content": "Thanks"},
    ],
}
OPTIONS: list[dict[str, Any]] = [
    {"add_generation_prompt": True},
    {"add_generation_prompt": True, "enable_thinking": False},
    {"add_generation_prompt": True, "tools": TOOLS},
    {"add_generation_prompt": False},
]

QWEN_STYLE = """{%- if tools %}{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- "# Tools\\n<tools>" }}{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\\n</tools><|im_end|>\\n" }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" %}
        {%- set ns.multi_step_tool = false %}{%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning = message.reasoning_content if message.reasoning_content is defined
            else '' %}
        {%- if loop.index0 > ns.last_query_index and reasoning %}
            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' }}
        {%- else %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
        {{- message.content | trim }}
        {%- for call in message.tool_calls or [] %}
            {%- set call = call.function if call.function else call %}
            {{- '\\n<tool_call>\\n{"name": "' + call.name + '", "arguments": ' }}
            {{- call.arguments if call.arguments is string else call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}
{%- endif %}"""

LLAMA3_STYLE = """{{- bos_token }}
{%- if not date_string is defined %}{%- set date_string = strftime_now("%d %b %Y") %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
{%- else %}{%- set system_message = "" %}{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools %}{%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\\n\\n" }}{%- endfor %}
{%- endif %}
{{- system_message + "<|eot_id|>" }}
{%- for message in messages %}
    {%- if 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", "parameters": ' + tool_call.arguments | tojson + "}" }}
        {%- for name, value in tool_call.arguments | items %}{{ name }}={{ value }};{% endfor %}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping %}{{- message.content | tojson }}
        {%- else %}{{- message.content }}{%- endif %}{{- "<|eot_id|>" }}
    {%- else %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}
        {{- message['content'] | trim + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

GEMMA_STYLE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}{%- set first_user_prefix = "" -%}{%- set loop_messages = messages -%}{%- endif -%}
{%- for message in loop_messages -%}
    {%- if message['role'] == 'tool' -%}{%- continue -%}{%- endif -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- set role = "model" if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}{{ message['content'] | trim }}
    {%- else -%}{%- for item in message['content'] if item['type'] == 'text' -%}
        {{ item['text'] | trim }}{%- endfor -%}{%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}
"""

PHI_STYLE = """{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}
{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}
{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}
{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}
{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"""

MISTRAL_STYLE = """{%- set user_messages = messages | selectattr("role", "equalto", "user") | list %}
{%- set ns = namespace(found=false) %}
{%- for message in messages %}{%- if message.role == "system" %}{%- set ns.found = true %}
{%- break %}{%- endif %}{%- endfor %}
{{- bos_token }}
{%- for message in messages %}
    {%- if message.role == "user" %}
        {%- if tools and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS][" }}
            {%- for tool in tools %}{{- tool.function | tojson(sort_keys=true,
                separators=(",", ":")) }}{%- if not loop.last %}{{- ", " }}{%- endif %}
            {%- endfor %}{{- "][/AVAILABLE_TOOLS]" }}
        {%- endif %}
        {{- "[INST]" + message.content + "[/INST]" }}
    {%- elif message.role == "assistant" and message.tool_calls %}
        {{- "[TOOL_CALLS][" }}
        {%- for call in message.tool_calls %}
            {{- {"name": call.function.name, "arguments": call.function.arguments} | tojson(ensure_ascii=true) }}
        {%- endfor %}{{- "]" + eos_token }}
    {%- elif message.role == "assistant" %}{{- message.content + eos_token }}
    {%- elif message.role == "tool" %}{{- "[TOOL_RESULTS]" + message.content + "[/TOOL_RESULTS]" }}
    {%- elif message.role != "system" %}
        {{- raise_exception("Only user, assistant and tool roles are supported!") }}
    {%- endif %}
{%- endfor %}"""

HARMONY_STYLE = """{%- macro describe(spec, depth=0) -%}
    {%- if spec.type == "object" and spec.properties -%}
        {{- "{" }}{%- for name, sub in spec.properties.items() -%}
            {{- name }}{%- if name not in (spec.required or []) -%}?{%- endif -%}: {{ describe(sub, depth + 1) }}
            {%- if not loop.last -%}, {% endif -%}
        {%- endfor -%}{{- "}" }}
    {%- elif spec.enum -%}{{- '"' + spec.enum | join('" | "') + '"' -}}
    {%- else -%}{{- spec.type }}{%- if spec.default is defined %} // default: {{ spec.default | tojson }}{% endif -%}
    {%- endif -%}
{%- endmacro -%}
{{- "<|start|>system<|message|>Knowledge cutoff: 2024-06\\nCurrent date: " + strftime_now("%Y-%m-%d") }}
{{- "\\nReasoning: " + (reasoning_effort if reasoning_effort is defined else "medium") + "<|end|>" }}
{%- if tools %}{{- "<|start|>developer<|message|># Tools\\n" }}
    {%- for tool in tools %}{{- "type " + tool.function.name + " = (_: " + describe(tool.function.parameters) + ") => any;\\n" }}
    {%- endfor %}{{- "<|end|>" }}{%- endif %}
{%- set last = namespace(name=none) %}
{%- for message in messages -%}
    {%- if message.role == 'assistant' -%}
        {%- if "thinking" in message and not loop.last %}
            {{- "<|start|>assistant<|channel|>analysis<|message|>" + message.thinking + "<|end|>" }}
        {%- endif %}
        {%- if message.tool_calls %}{%- set call = message.tool_calls[0].function %}
            {{- "<|start|>assistant to=functions." + call.name + "<|channel|>commentary json<|message|>" }}
            {{- call.arguments | tojson }}{{- "<|call|>" }}{%- set last.name = call.name %}
        {%- else %}
            {% generation %}{{- "<|start|>assistant<|channel|>final<|message|>" + message.content + "<|end|>" }}{% endgeneration %}
        {%- endif %}
    {%- elif message.role == 'tool' -%}
        {{- "<|start|>functions." + last.name + " to=assistant<|channel|>commentary<|message|>" + message.content | tojson + "<|end|>" }}
    {%- else -%}{{- "<|start|>" + message.role + "<|message|>" + message.content + "<|end|>" }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"""

STYLES = {
    "qwen": QWEN_STYLE,
    "llama3": LLAMA3_STYLE,
    "gemma": GEMMA_STYLE,
    "phi": PHI_STYLE,
    "mistral": MISTRAL_STYLE,
    "harmony": HARMONY_STYLE,
}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, EngineTokenizer]:
    """(transformers' TokenizersBackend, ours) over the bundled model's header-cache files."""
    from transformers import TokenizersBackend

    from engine.gguf import reader as gguf_reader
    from engine.gguf.tokenizer import tokenizer_files

    folder = tmp_path_factory.mktemp("smollm2")
    body, config = tokenizer_files(gguf_reader.open_gguf(bundled_gguf()).metadata)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    config.pop("tokenizer_class")
    backend: Any = TokenizersBackend
    reference = backend(tokenizer_file=str(folder / "tokenizer.json"), **config)
    return reference, EngineTokenizer.from_folder(folder)


def outcome(tokenizer: Any, conversation: list[dict[str, Any]], **options: Any) -> str:
    """The rendered text, or the error: with the template's own message where the user sees
    it (raise_exception: a TemplateError), else its type (the wording is ours)."""
    from jinja2 import TemplateError

    try:
        return str(tokenizer.apply_chat_template(conversation, tokenize=False, **options))
    except TemplateError as exc:
        return f"{type(exc).__name__}: {exc}" if type(exc) is TemplateError else type(exc).__name__
    except Exception as exc:  # the same failure is the expected outcome
        return type(exc).__name__


def assert_renders_alike(pair: tuple[Any, EngineTokenizer], template: str | None) -> None:
    reference, ours = pair
    rendered = 0
    for name, conversation in CONVERSATIONS.items():
        for options in OPTIONS:
            extra = {"chat_template": template} if template is not None else {}
            expected = outcome(reference, conversation, **options, **extra)
            assert outcome(ours, conversation, **options, **extra) == expected, (name, options)
            rendered += not expected.startswith(("TemplateError", "ValueError"))
    assert rendered, "the template refused every conversation: the comparison proves little"


def test_the_bundled_template_renders_as_transformers_does(pair: Any) -> None:
    assert pair[1].chat_template == pair[0].chat_template
    assert_renders_alike(pair, None)


@pytest.mark.parametrize("style", sorted(STYLES))
def test_family_style_templates_render_as_transformers_does(pair: Any, style: str) -> None:
    assert_renders_alike(pair, STYLES[style])


@pytest.mark.parametrize("field", ["content", "reasoning_content"])
def test_a_continued_message_is_cut_where_transformers_cuts_it(pair: Any, field: str) -> None:
    reference, ours = pair
    conversation = [
        {"role": "user", "content": "Count"},
        {"role": "assistant", "content": "One, two, ", "reasoning_content": "Easy  "},
    ]
    for template in (QWEN_STYLE, HARMONY_STYLE, None):
        kwargs = {"chat_template": template, "continue_final_message": field}
        expected = outcome(reference, conversation, **kwargs)
        assert outcome(ours, conversation, **kwargs) == expected


@pytest.mark.parametrize(
    "snippet",
    [
        "{{ {'a': '<&>', 'b': [1, 2.5, none, true]} | tojson }}",
        "{{ {'b': 1, 'a': 'é'} | tojson(indent=2, sort_keys=true, ensure_ascii=true) }}",
        "{{ [1, 2] | tojson(separators=(',', ':')) }}",
        "{% set ns = namespace(x=1) %}{% set ns.x = ns.x + 1 %}{{ ns.x }}",
        "{% set ns = namespace(_x=1) %}{{ ns._x }}",
        "{{ dict(a=1, b=2) | tojson }}{{ dict.fromkeys(['k'], 0) | tojson }}",
        "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}"
        "{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
        "  {% if true %}\n  kept\n  {% endif %}\n",
        "{{ raise_exception('no ' + bos_token) }}",
        "{{ messages[0].__class__ }}",
        "{{ ''.__class__.__mro__ }}",
        "{% generation %}inside {{ messages | length }}{% endgeneration %}",
        "{{ messages[0].content.upper() }}{{ messages[0].pop('content') }}",
        "{{ strftime_now('%Y') | length }}",
    ],
)
def test_the_environment_behaves_as_transformers_does(pair: Any, snippet: str) -> None:
    reference, ours = pair
    conversation = [{"role": "user", "content": "hi"}]
    expected = outcome(reference, conversation, chat_template=snippet)
    assert outcome(ours, conversation, chat_template=snippet) == expected


def real_templates() -> list[Path]:
    folder = os.environ.get("HEARTH_TEMPLATE_DIR")
    return sorted(Path(folder).glob("*.jinja")) if folder else []


@pytest.mark.skipif(not real_templates(), reason="HEARTH_TEMPLATE_DIR names no *.jinja files")
@pytest.mark.parametrize("path", real_templates(), ids=lambda p: p.stem)
def test_real_templates_render_as_transformers_does(pair: Any, path: Path) -> None:
    assert_renders_alike(pair, path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "template",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% set ns = namespace(s='ab') %}"
        "{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    ],
    ids=["loops", "doubling"],
)
def test_the_sandbox_limits_hold_for_our_renderer(pair: Any, template: str) -> None:
    """`engine.template_sandbox` watches Jinja's compiled template code: ours is compiled the
    same way, so a runaway template is stopped here too."""
    from engine.template_sandbox import TemplateLimitError, TemplateLimits, run_limited

    ours = pair[1]
    limits = TemplateLimits(max_seconds=1.0, max_output_chars=2**20)
    with pytest.raises(TemplateLimitError, match="stopped"):
        run_limited(
            lambda: ours.apply_chat_template(
                [{"role": "user", "content": "hi"}], chat_template=template, tokenize=False
            ),
            limits=limits,
        )
