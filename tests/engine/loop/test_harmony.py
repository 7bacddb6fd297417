"""gpt-oss's harmony replies: thinking (analysis channel) apart from the answer (final channel).

The splitter on every chunking of generated replies is `tests.engine.loop.test_harmony_splitter`.
Here, the engine's part runs the real generation loop, detokenizer and EOS set on the
tokenizer the engine builds from a GGUF's metadata (an o200k_harmony-style vocabulary: the
bundled BPE plus gpt-oss's special tokens). Random weights never write harmony, so the
"model" there is a runner that scripts the next token (one-hot logits); everything downstream
of the logits is the engine's own: the loop, the local OpenAI server and Hearth's client of
it, the CLI. Last, the engine opens a tiny random gpt-oss GGUF carrying that vocabulary on
the fast path (EOS set, no marker shown).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from bench.synth.vocab import bundled_vocab, with_specials, write_vocab_file
from engine.generate import generate
from engine.gguf import reader as gguf_reader
from engine.gguf.tokenizer import tokenizer_files
from engine.harmony import MARKERS, is_harmony
from engine.loader import _load_built_tokenizer, collect_eos_ids
from engine.remote.backend import RemoteEngine
from engine.serve.server import serve_in_thread
from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    ModelInfo,
    ReasoningDelta,
    SamplingParams,
    TextDelta,
)

# gpt-oss's special tokens (o200k_harmony), in its order.
HARMONY_SPECIALS = [
    "<|startoftext|>",
    "<|endoftext|>",
    "<|return|>",
    "<|constrain|>",
    "<|channel|>",
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|call|>",
]
# A short harmony chat template in the spirit of gpt-oss's: past turns carry only their final
# answer; an assistant turn's ``thinking`` is rendered only when it is the last message and
# no generation prompt follows (continuing it).
HARMONY_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}"
    "{%- if loop.last and not add_generation_prompt and m.thinking is defined -%}"
    "<|start|>assistant<|channel|>analysis<|message|>{{ m.thinking }}<|end|>"
    "{%- endif -%}"
    "<|start|>assistant<|channel|>final<|message|>{{ m.content }}"
    "{%- if not loop.last or add_generation_prompt %}<|end|>{% endif -%}"
    "{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

REPLY = (
    "<|channel|>analysis<|message|>The user greets me; answer kindly, 简短.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Hello! Nice to meet you 😊<|return|>"
)


def shows_no_marker(text: str) -> bool:
    """No harmony marker anywhere in ``text``."""
    return not any(m in text for m in MARKERS)


# --- the engine, on the tokenizer it builds from a GGUF --------------------------------------


def build_harmony_tokenizer(folder: Path) -> Any:
    """The tokenizer the engine builds from a GGUF carrying a harmony vocabulary and template."""
    vocab = with_specials(bundled_vocab(), HARMONY_SPECIALS, [])
    ids = {t: vocab.tokens.index(t) for t in HARMONY_SPECIALS}
    vocab.extra.update(
        {
            "tokenizer.ggml.bos_token_id": ids["<|startoftext|>"],
            "tokenizer.ggml.eos_token_id": ids["<|return|>"],  # as gpt-oss GGUFs declare it
            "tokenizer.ggml.padding_token_id": ids["<|endoftext|>"],
            "tokenizer.ggml.add_bos_token": False,
            "tokenizer.chat_template": HARMONY_TEMPLATE,
        }
    )
    gguf = write_vocab_file(folder / "harmony-vocab.gguf", vocab, arch="gpt-oss", pre="gpt-4o")
    body, config = tokenizer_files(gguf_reader.open_gguf(gguf).metadata)
    (folder / "tokenizer.json").write_text(json.dumps(body), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return _load_built_tokenizer(folder)


@pytest.fixture(scope="module")
def harmony_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_harmony_tokenizer(tmp_path_factory.mktemp("harmony"))


class ScriptedRunner:
    """Stands in for the model's forward only: its logits pick the next scripted token."""

    def __init__(self, script: Sequence[int], vocab_size: int) -> None:
        self.context_window = 4096
        self._script, self._vocab = list(script), vocab_size
        self._ids: list[int] = []
        self._prompt = 0

    @property
    def cached_ids(self) -> list[int]:
        return list(self._ids)

    def extend(self, ids: Sequence[int], last_only: bool = False) -> torch.Tensor:
        if not self._prompt:
            self._prompt = len(self._ids) + len(ids)
        self._ids += ids
        step = len(self._ids) - self._prompt
        logits = torch.full((1, self._vocab), -1e9)  # (1, V)
        logits[0, self._script[min(step, len(self._script) - 1)]] = 0.0
        return logits

    def crop(self, n: int) -> None:
        del self._ids[n:]

    def reset(self) -> None:
        self._ids = []


def _run(tokenizer: Any, script: list[int], **params: Any) -> tuple[list[Any], Finished]:
    request = GenerationRequest(
        messages=(Message("user", "Hi"),), params=SamplingParams(temperature=0.0, **params)
    )
    runner = ScriptedRunner(script, len(tokenizer))
    eos = collect_eos_ids(None, None, tokenizer)
    events = list(generate(runner, tokenizer, request, eos_ids=eos))
    finished = events[-1]
    assert isinstance(finished, Finished)
    return events, finished


def test_gpt_oss_turn_ends_at_return_or_call_not_at_end(harmony_tokenizer: Any) -> None:
    vocab = harmony_tokenizer.get_vocab()
    assert is_harmony(harmony_tokenizer)
    eos = collect_eos_ids(None, {"eos_token_id": vocab["<|return|>"]}, harmony_tokenizer)
    assert {vocab["<|return|>"], vocab["<|call|>"]} <= eos
    assert vocab["<|end|>"] not in eos  # it closes the analysis message, not the turn


def test_engine_streams_analysis_as_thinking_and_final_as_text(harmony_tokenizer: Any) -> None:
    script = harmony_tokenizer.encode(REPLY, add_special_tokens=False)
    events, finished = _run(harmony_tokenizer, script)
    thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert thinking == "The user greets me; answer kindly, 简短."
    assert answer == "Hello! Nice to meet you 😊"
    assert finished.text == answer
    assert finished.reason == FinishReason.STOP  # at <|return|>, after the <|end|> mid-turn
    assert list(finished.token_ids) == script[:-1]
    first_answer = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(not isinstance(e, ReasoningDelta) for e in events[first_answer:])


def test_a_tool_call_ends_the_turn_and_shows_no_markers(harmony_tokenizer: Any) -> None:
    call = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>'
    )
    script = harmony_tokenizer.encode(call, add_special_tokens=False)
    events, finished = _run(harmony_tokenizer, [*script, *script])
    assert finished.reason == FinishReason.STOP
    assert len(finished.token_ids) == len(script) - 1  # stopped at <|call|>
    shown = "".join(e.text for e in events if isinstance(e, TextDelta | ReasoningDelta))
    assert shown == "Need weather."


def test_a_cut_off_reply_keeps_its_thinking(harmony_tokenizer: Any) -> None:
    script = harmony_tokenizer.encode(REPLY, add_special_tokens=False)
    events, finished = _run(harmony_tokenizer, script, max_new_tokens=8)
    assert finished.reason == FinishReason.LENGTH
    thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert thinking and "The user greets me".startswith(thinking[:18].rstrip())
    assert not any(isinstance(e, TextDelta) for e in events) and finished.text == ""


def test_past_thinking_is_not_fed_back(harmony_tokenizer: Any) -> None:
    from engine.text import render_prompt

    turns = [
        Message("user", "Hi"),
        Message("assistant", "Hello!", reasoning="SECRET plan"),
        Message("user", "Again"),
    ]
    prompt = render_prompt(harmony_tokenizer, turns)
    assert "SECRET" not in prompt and "Hello!" in prompt
    assert prompt.endswith("<|start|>assistant")


# --- the local OpenAI server, and Hearth's own client of it ----------------------------------


class HarmonyBackend:
    """The real generation loop on the harmony tokenizer, fed by a `ScriptedRunner`."""

    def __init__(self, tokenizer: Any, script: list[int]) -> None:
        self.info = ModelInfo(
            name="gpt-oss-test",
            source="t",
            backend="torch",
            device="cpu",
            dtype="-",
            context_window=4096,
        )
        self._tokenizer, self.script = tokenizer, script

    def generate(
        self, request: GenerationRequest, cancel: Any = None, live: Any = None
    ) -> Iterator[Event]:
        runner = ScriptedRunner(self.script, len(self._tokenizer))
        eos = collect_eos_ids(None, None, self._tokenizer)
        yield from generate(runner, self._tokenizer, request, eos_ids=eos, cancel=cancel)

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        return 8 * len(messages)

    def close(self) -> None:
        pass


def test_local_server_sends_analysis_as_reasoning_content(harmony_tokenizer: Any) -> None:
    script = harmony_tokenizer.encode(REPLY, add_special_tokens=False)
    backend = HarmonyBackend(harmony_tokenizer, script)
    with serve_in_thread(backend) as handle:
        body = {"model": "gpt-oss-test", "messages": [{"role": "user", "content": "Hi"}]}
        whole = httpx.post(f"{handle.url}/chat/completions", json=body, timeout=60).json()
        message = whole["choices"][0]["message"]
        assert message["content"] == "Hello! Nice to meet you 😊"
        assert message["reasoning_content"] == "The user greets me; answer kindly, 简短."
        # Streamed, read back by Hearth's own remote client: thinking arrives apart.
        client = RemoteEngine(handle.url, "gpt-oss-test")
        request = GenerationRequest(messages=(Message("user", "Hi"),))
        events = list(client.generate(request))
        client.close()
    thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert (thinking, answer) == (message["reasoning_content"], message["content"])


def test_cli_keeps_thinking_apart_from_the_answer(
    harmony_tokenizer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli.generate import _print_events

    script = harmony_tokenizer.encode(REPLY, add_special_tokens=False)
    events, _ = _run(harmony_tokenizer, script)
    _print_events(iter(events), as_json=False)
    out, err = capsys.readouterr()
    assert out == "Hello! Nice to meet you 😊\n"
    assert err == "The user greets me; answer kindly, 简短."
    _print_events(iter(events), as_json=True)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "reasoning" and kinds[-1] == "done" and "delta" in kinds
    assert records[-1]["text"] == "Hello! Nice to meet you 😊"


# --- a tiny gpt-oss GGUF with the harmony vocabulary, opened by the engine -------------------


@pytest.fixture(scope="module")
def harmony_gpt_oss(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny gpt-oss file whose vocabulary ends in gpt-oss's special tokens, with the
    harmony template and ``<|return|>`` as its EOS (as real gpt-oss GGUFs declare)."""
    from gguf import GGUFValueType

    from bench.synth import core as synth
    from bench.synth.configs import TOKENIZER_VOCAB
    from bench.synth.moe import tiny_moe_config, write_moe_model

    size = TOKENIZER_VOCAB + len(HARMONY_SPECIALS)
    plain_fields = synth._tokenizer_fields

    def harmony_fields(vocab: int) -> list[tuple[str, Any, Any, Any]]:
        fields = []
        for key, value, vtype, sub in plain_fields(vocab):
            if key == "tokenizer.ggml.tokens":
                value = value[:TOKENIZER_VOCAB] + HARMONY_SPECIALS
            if key not in ("tokenizer.chat_template", "tokenizer.ggml.eos_token_id"):
                fields.append((key, value, vtype, sub))
        eos = TOKENIZER_VOCAB + HARMONY_SPECIALS.index("<|return|>")
        fields.append(("tokenizer.ggml.eos_token_id", eos, GGUFValueType.UINT32, None))
        fields.append(("tokenizer.chat_template", HARMONY_TEMPLATE, GGUFValueType.STRING, None))
        return fields

    path = tmp_path_factory.mktemp("gpt-oss") / "gpt-oss-harmony.gguf"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(synth, "_tokenizer_fields", harmony_fields)
        config = tiny_moe_config("gpt-oss", vocab_size=size)
        write_moe_model(path, "gpt-oss", "Q8_0", config=config, reference=False)
    return path


def test_engine_on_a_gpt_oss_file_ends_turns_at_return_and_never_shows_markers(
    harmony_gpt_oss: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.engine import Engine

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    engine = Engine(str(harmony_gpt_oss), device="cpu", context_window=256)
    try:
        tokenizer = engine._loaded.tokenizer  # the one the header cache built from the file
        vocab = tokenizer.get_vocab()
        assert is_harmony(tokenizer) and engine.info.backend == "onnx"  # the fast path
        assert {vocab["<|return|>"], vocab["<|call|>"]} <= engine.eos_ids
        assert vocab["<|end|>"] not in engine.eos_ids
        request = GenerationRequest(
            messages=(Message("user", "Hi"),),
            params=SamplingParams(temperature=1.0, seed=3, max_new_tokens=24),
        )
        events = list(engine.generate(request))
    finally:
        engine.close()
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.error is None
    shown = [e.text for e in events if isinstance(e, TextDelta | ReasoningDelta)]
    assert all(shows_no_marker(t) for t in shown)
    # Random weights write no headers: their text is plain answer, all of it shown.
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == finished.text


# --- continuing a stopped reply ----------------------------------------------------------------


def test_continuing_reopens_the_channel_the_reply_stopped_in(harmony_tokenizer: Any) -> None:
    from engine.text import render_prompt

    user = Message("user", "Hi")
    thinking_only = render_prompt(
        harmony_tokenizer,
        [user, Message("assistant", "", reasoning="The user")],
        continue_last=True,
    )
    assert thinking_only.endswith(
        "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>analysis<|message|>The user"
    )
    answering = render_prompt(
        harmony_tokenizer,
        [user, Message("assistant", "Hel", reasoning="Greet.")],
        continue_last=True,
    )
    assert answering.endswith(
        "<|start|>assistant<|channel|>analysis<|message|>Greet.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hel"
    )


def test_a_reply_continued_inside_its_thinking_streams_thinking_then_the_answer(
    harmony_tokenizer: Any,
) -> None:
    rest = " greets me.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"
    script = harmony_tokenizer.encode(rest, add_special_tokens=False)
    request = GenerationRequest(
        messages=(Message("user", "Hi"), Message("assistant", "", reasoning="The user")),
        params=SamplingParams(temperature=0.0),
        continue_last=True,
    )
    runner = ScriptedRunner(script, len(harmony_tokenizer))
    eos = collect_eos_ids(None, None, harmony_tokenizer)
    events = list(generate(runner, harmony_tokenizer, request, eos_ids=eos))
    thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert (thinking, answer) == (" greets me.", "Hello!")


def test_offered_tools_turn_a_commentary_call_into_a_tool_call(harmony_tokenizer: Any) -> None:
    """With tools offered (engine.tools), the call addressed to=functions.X is a ToolCall."""
    from engine.types import ToolSpec

    call = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>'
    )
    script = harmony_tokenizer.encode(call, add_special_tokens=False)
    runner = ScriptedRunner(script, len(harmony_tokenizer))
    request = GenerationRequest(
        messages=(Message("user", "Weather in Oslo?"),),
        params=SamplingParams(temperature=0.0),
        tools=(ToolSpec("get_weather", "Weather for a city."),),
    )
    eos = collect_eos_ids(None, None, harmony_tokenizer)
    events = list(generate(runner, harmony_tokenizer, request, eos_ids=eos))
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason == FinishReason.TOOL_CALLS
    assert [(c.name, json.loads(c.arguments)) for c in finished.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert not any(isinstance(e, TextDelta) for e in events) and finished.text == ""
