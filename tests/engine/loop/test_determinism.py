"""Same answer every time (issue 21 item 1): a conversation's reply has the same token ids
whether its prompt was prefilled cold, came from the prefix cache, or follows a branch switch,
at temperature 0 and with a fixed seed at temperature > 0. On the bundled SmolLM2 (the ONNX
fast path, int8 activations: where a 1-token run used to round differently from a prefill)
and the tiny torch model; and the local server's streamed and plain replies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from engine.engine import Engine
from engine.types import Finished, GenerationRequest, Message, SamplingParams

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=20)
SEEDED = SamplingParams(temperature=0.9, top_p=0.95, seed=7, max_new_tokens=20)
FIRST = (Message("user", "Name three colours."),)
_COLD = iter(range(1_000_000))  # a fresh conversation id per cold run: nothing parked for it


def reply(engine: Any, messages: tuple[Message, ...], params: SamplingParams, conv: str) -> Any:
    request = GenerationRequest(messages=messages, params=params, conversation_id=conv)
    done = list(engine.generate(request))[-1]
    assert isinstance(done, Finished)
    return done


def cold(engine: Any, messages: tuple[Message, ...], params: SamplingParams) -> tuple[int, ...]:
    engine.runner.reset()  # nothing cached: the whole prompt is prefilled
    done = reply(engine, messages, params, f"cold-{next(_COLD)}")
    assert done.stats.cached_prompt_tokens == 0
    return tuple(done.token_ids)


@pytest.fixture(scope="module")
def fast_bundled() -> Iterator[Engine]:
    engine = Engine("bundled")  # a .gguf on the CPU: the ONNX fast path
    assert engine.info.backend == "onnx"
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def gqa_bundled() -> Iterator[Engine]:
    """The bundled model on GroupQueryAttention, where steps without ``paired_decode`` round
    apart (the kernel's HearthAttention rounds every row alike: no such steps there)."""
    saved = os.environ.get("HEARTH_ATTENTION_OP")
    os.environ["HEARTH_ATTENTION_OP"] = "0"  # read once, as the graph is chosen
    try:
        engine = Engine("bundled")
    finally:
        if saved is None:
            del os.environ["HEARTH_ATTENTION_OP"]
        else:
            os.environ["HEARTH_ATTENTION_OP"] = saved
    assert engine.info.backend == "onnx" and not engine.runner.kernel_attention  # type: ignore[attr-defined]
    yield engine
    engine.close()


def check_conversation(engine: Any, params: SamplingParams) -> None:
    """Cold == warm == after a branch switch, for a first and a second turn."""
    first = cold(engine, FIRST, params)
    warm = reply(engine, FIRST, params, "chat")  # primes the cache
    again = reply(engine, FIRST, params, "chat")  # all but the last prompt token cached
    cached = again.stats.cached_prompt_tokens
    assert cached == again.stats.prompt_tokens - (2 if engine.info.backend == "onnx" else 1)
    assert tuple(warm.token_ids) == first
    assert tuple(again.token_ids) == first

    # Second turn: the cache holds the first reply as it was decoded, one token per step.
    second = (*FIRST, Message("assistant", again.text), Message("user", "Three more, please."))
    warm2 = reply(engine, second, params, "chat")
    assert warm2.stats.cached_prompt_tokens > 0
    assert tuple(warm2.token_ids) == cold(engine, second, params)

    # Branch switch: regenerate the first reply after the second turn was cached.
    reply(engine, second, params, "chat")
    branch = reply(engine, FIRST, params, "chat")
    assert tuple(branch.token_ids) == first
    # Edit the earlier message: a sibling branch, cold and warm alike.
    edited = (Message("user", "Name three colours, briefly."),)
    assert tuple(reply(engine, edited, params, "chat").token_ids) == cold(engine, edited, params)


@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_the_bundled_model_on_the_fast_path_answers_the_same(
    fast_bundled: Engine, params: SamplingParams
) -> None:
    check_conversation(fast_bundled, params)


def test_only_what_a_cold_prefill_would_compute_is_reused(gqa_bundled: Engine) -> None:
    """The mechanism: runs of >= 2 tokens give bitwise the same logits however the sequence
    is split, and so do decode steps (`OnnxRunner.exact_steps`), so both are reused; steps
    that round apart (``paired_decode`` off: MLAS's M == 1 kernel) are not."""
    runner: Any = gqa_bundled.runner
    ids = gqa_bundled.tokenize("Name three colours, then three animals, then three trees.")
    runner.reset()
    whole = runner.extend(ids, last_only=True)[-1]
    for split in ([len(ids) - 2, 2], [4, 4, len(ids) - 8]):
        runner.reset()
        start = 0
        for n in split:
            logits = runner.extend(ids[start : start + n], last_only=True)[-1]
            start += n
        assert bool((logits == whole).all()), split
    runner.extend([17], last_only=True)  # a decode step
    runner.extend([18, 19], last_only=True)  # a draft verified after it
    assert runner.reusable_length == len(ids) + 3
    runner.paired_decode = False
    try:
        runner.extend([20], last_only=True)  # a step that rounds apart
        runner.extend([21, 22], last_only=True)  # and a run after it: not reusable either
    finally:
        runner.paired_decode = True
    assert runner.reusable_length == len(ids) + 3
    runner.crop(len(ids) - 1)
    assert runner.reusable_length == len(ids) - 1
    runner.reset()


def test_a_reply_is_reused_as_decoded_and_answers_the_same(fast_bundled: Engine) -> None:
    """A reply's decoded K/V are a cold prefill's, so settling has nothing to redo, the next
    turn reuses the whole reply, and it still answers as a cold run."""
    first = reply(fast_bundled, FIRST, GREEDY, "settled")
    runner: Any = fast_bundled.runner
    assert runner.reusable_length == len(runner.cached_ids)
    assert fast_bundled.settle() == 0
    second = (*FIRST, Message("assistant", first.text), Message("user", "Three more, please."))
    warm = reply(fast_bundled, second, GREEDY, "settled")
    assert warm.stats.cached_prompt_tokens >= first.stats.prompt_tokens + len(first.token_ids) - 2
    assert tuple(warm.token_ids) == cold(fast_bundled, second, GREEDY)


def test_a_settled_reply_is_reused_and_answers_the_same(gqa_bundled: Engine) -> None:
    """Where steps round apart (``paired_decode`` off), what the app does when a reply ends:
    the reply's K/V are redone as prefill runs, so the next turn reuses them (no prefill of
    the reply then) and still answers as cold."""
    runner: Any = gqa_bundled.runner
    runner.paired_decode = False
    try:
        first = reply(gqa_bundled, FIRST, GREEDY, "settled-apart")
        assert runner.reusable_length < len(runner.cached_ids)
        assert gqa_bundled.settle() > 0
        assert runner.reusable_length == len(runner.cached_ids)
        assert gqa_bundled.settle() == 0  # nothing left to redo
    finally:
        runner.paired_decode = True
    second = (*FIRST, Message("assistant", first.text), Message("user", "Three more, please."))
    warm = reply(gqa_bundled, second, GREEDY, "settled-apart")
    assert warm.stats.cached_prompt_tokens >= first.stats.prompt_tokens + len(first.token_ids) - 2
    assert tuple(warm.token_ids) == cold(gqa_bundled, second, GREEDY)


def test_on_the_kernels_attention_an_unpaired_step_is_exact_and_reused(
    fast_bundled: Engine,
) -> None:
    """HearthAttention rounds a 1-token run as any longer run's row with or without the padded
    row, so a step taken with ``paired_decode`` off is reused as decoded, and equals its row."""
    runner: Any = fast_bundled.runner
    if not runner.kernel_attention:
        pytest.skip("the kernel's native ops do not serve here")
    ids = fast_bundled.tokenize("Name three colours, then three animals, then three trees.")
    runner.reset()
    whole = runner.extend([*ids, 20])[-1]
    runner.reset()
    runner.extend(ids, last_only=True)
    runner.paired_decode = False
    try:
        step = runner.extend([20], last_only=True)[-1]
        assert runner.exact_steps and runner.reusable_length == len(ids) + 1
    finally:
        runner.paired_decode = True
    assert bool((step == whole).all())
    runner.reset()


def test_the_tiny_torch_model_answers_the_same(tiny_engine: Any) -> None:
    # float32 torch: chunkings agree to ~1e-7 (not bitwise), far below the random model's
    # gaps between its top logits, so the ids agree.
    check_conversation(tiny_engine, GREEDY)


def test_a_one_token_run_rounds_as_in_a_prefill(fast_bundled: Engine) -> None:
    """Why: the issue's case, a cached prompt whose last token alone ran as a 1-token step.
    It used to round apart (GroupQueryAttention's M == 1 kernel); the graph now runs a 1-token
    step's attention as row 0 of a 2-row run (`engine.fastpath.graph._one_row_pad`)."""
    runner: Any = fast_bundled.runner
    ids = fast_bundled.tokenize("Name three colours, then three animals, then three trees.")
    runner.reset()
    whole = runner.extend(ids, last_only=True)[-1]
    runner.reset()
    runner.extend(ids[:-1], last_only=True)
    single = runner.extend(ids[-1:], last_only=True)[-1]
    assert bool((single == whole).all())
    runner.reset()


def test_streamed_and_not_streamed_server_replies_are_the_same(fast_bundled: Engine) -> None:
    import json
    import urllib.request

    from engine.serve.server import serve_in_thread

    server = serve_in_thread(fast_bundled, "127.0.0.1", 0, None)
    try:
        texts = []
        for stream in (False, True, False):
            body = {
                "model": "bundled",
                "messages": [{"role": "user", "content": "Name three colours."}],
                "temperature": 0,
                "max_tokens": 16,
                "stream": stream,
            }
            request = urllib.request.Request(
                f"{server.url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=120) as response:
                raw = response.read().decode()
            if not stream:
                texts.append(json.loads(raw)["choices"][0]["message"]["content"])
                continue
            chunks = [json.loads(line[6:]) for line in raw.splitlines() if line[6:12] == '{"id":']
            texts.append("".join(c["choices"][0]["delta"].get("content") or "" for c in chunks))
        assert texts[0] and texts[0] == texts[1] == texts[2]
    finally:
        server.stop()
