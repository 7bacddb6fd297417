"""The Engine facade on the tiny model: info, tokenize/count, load progress, per-conversation
prefix caches, beam search against transformers, close."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.beam import beam_kwargs
from engine.engine import Engine
from engine.errors import EngineClosedError, InvalidParamsError
from engine.text import fit_context
from engine.types import (
    Backend,
    Finished,
    FinishReason,
    GenerationRequest,
    LoadProgress,
    Message,
    SamplingParams,
    TextDelta,
)

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=8)


def ask(text: str) -> tuple[Message, ...]:
    return (Message("system", "Be brief."), Message("user", text))


def finish(engine: Any, request: GenerationRequest, **kw: Any) -> Finished:
    event = list(engine.generate(request, **kw))[-1]
    assert isinstance(event, Finished)
    return event


def test_engine_is_a_backend_with_info(tiny_engine: Any, tiny_model_dir: Path) -> None:
    assert isinstance(tiny_engine, Backend)
    info = tiny_engine.info
    assert (info.backend, info.device, info.dtype) == ("torch", "cpu", "float32")
    assert info.context_window == 1024  # the tiny config's max_position_embeddings
    assert info.source == str(tiny_model_dir)
    assert tiny_engine.eos_ids >= {0, 2}  # <|endoftext|> and <|im_end|>


def test_tokenize_and_count(tiny_engine: Any) -> None:
    ids = tiny_engine.tokenize("Hello world")
    assert ids and tiny_engine.tokenizer.decode(ids) == "Hello world"
    messages = ask("Hello world")
    fitted = fit_context(tiny_engine.tokenizer, messages, context_window=1024, reserve_tokens=0)
    assert tiny_engine.count_tokens(messages) == len(fitted.ids)


def test_load_reports_progress_in_order(tiny_model_dir: Path) -> None:
    seen: list[LoadProgress] = []
    engine = Engine(str(tiny_model_dir), device="cpu", context_window=128, progress=seen.append)
    try:
        stages = [p.stage for p in seen]
        assert stages[0] == "resolve" and stages[-1] == "ready"
        assert stages.index("load") < stages.index("warmup") < stages.index("ready")
        assert engine.info.context_window == 128
    finally:
        engine.close()
    with pytest.raises(EngineClosedError):
        engine.generate(GenerationRequest(ask("hi"), GREEDY))


def test_bad_engine_arguments_are_named(tiny_model_dir: Path) -> None:
    with pytest.raises(InvalidParamsError, match="backend"):
        Engine(str(tiny_model_dir), backend="tpu")
    with pytest.raises(InvalidParamsError, match="dtype"):
        Engine(str(tiny_model_dir), dtype="int3")
    with pytest.raises(InvalidParamsError, match="context_window"):
        Engine(str(tiny_model_dir), context_window=10**7)


def test_conversations_keep_their_own_prefix_cache(tiny_engine: Any) -> None:
    a1 = GenerationRequest(ask("First chat."), GREEDY, conversation_id="a")
    b1 = GenerationRequest(ask("A different chat entirely."), GREEDY, conversation_id="b")
    first_a = finish(tiny_engine, a1)
    finish(tiny_engine, b1)
    a2_messages = (*a1.messages, Message("assistant", "Sure."), Message("user", "Again."))
    a2 = finish(tiny_engine, GenerationRequest(a2_messages, GREEDY, conversation_id="a"))
    # Conversation a's turn-1 prompt came back from its parked cache although b ran between.
    assert a2.stats.cached_prompt_tokens == first_a.stats.prompt_tokens


def test_sampled_runs_reproduce_with_a_seed(tiny_engine: Any) -> None:
    params = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=42)
    request = GenerationRequest(ask("Tell me a story."), params.replace(max_new_tokens=10))
    assert finish(tiny_engine, request).token_ids == finish(tiny_engine, request).token_ids


def test_beam_search_equals_transformers(tiny_engine: Any) -> None:
    params = GREEDY.replace(num_beams=3, max_new_tokens=10)
    request = GenerationRequest(ask("Name three colours."), params)
    events = list(tiny_engine.generate(request))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    done = events[-1]
    assert isinstance(done, Finished) and len(deltas) <= 1
    prompt = fit_context(
        tiny_engine.tokenizer, request.messages, context_window=1024, reserve_tokens=10
    ).ids
    input_ids = torch.tensor([list(prompt)])
    with torch.inference_mode():
        out = tiny_engine.loaded.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            **beam_kwargs(params, tiny_engine.eos_ids, 10),
        )
    expected = [t for t in out[0, len(prompt) :].tolist() if t not in tiny_engine.eos_ids]
    assert list(done.token_ids) == expected
    assert done.text == tiny_engine.tokenizer.decode(expected, skip_special_tokens=True)
    assert (deltas[0].text if deltas else "") == done.text


def test_beam_search_honours_cancel(tiny_engine: Any) -> None:
    cancel = threading.Event()
    cancel.set()
    request = GenerationRequest(ask("hi"), GREEDY.replace(num_beams=2, max_new_tokens=50))
    done = finish(tiny_engine, request, cancel=cancel)
    assert done.reason == FinishReason.CANCELLED
    assert done.stats.completion_tokens <= 1


def test_a_new_request_closes_an_unfinished_stream(tiny_engine: Any) -> None:
    first = tiny_engine.generate(GenerationRequest(ask("One."), GREEDY.replace(max_new_tokens=30)))
    next(first), next(first)  # PromptPrepared and the first delta: mid-stream
    second = GenerationRequest(ask("Two."), GREEDY)
    done = finish(tiny_engine, second)
    with pytest.raises(StopIteration):
        next(first)
    tiny_engine.runner.reset()
    assert finish(tiny_engine, second).token_ids == done.token_ids
