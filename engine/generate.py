"""THE generation loop: prompt in, a stream of small frozen events out.

Owns the one story of a local generation — fit the context, reuse the cached prefix, prefill,
then per token: read the live params, sample, check EOS, detokenize, check stop strings,
yield — and the finish reason and stats at the end. Talks only to a `Runner` (any forward
implementation) and a tokenizer. Does not own the model, the sampling filters
(`engine.sampling`), detokenizing (`engine.detokenizer`), prompt rendering and fitting
(`engine.text`), prompt-lookup drafting (`engine.speculative`, used when ``speculative`` is
on and decoding is greedy), or threads: it is a plain synchronous generator, run on one worker
thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from engine.detokenizer import IncrementalDetokenizer
from engine.harmony import HarmonySplitter, Kind, is_harmony, reopen_reply
from engine.kv_cache import reuse_prefix
from engine.runners.base import Runner
from engine.sampling import make_generator, sample_next_token
from engine.speculative import DraftVerifier
from engine.template_sandbox import RenderCancelled
from engine.text import fit_context, opens_thinking
from engine.tools.grammar import token_mask_for
from engine.tools.render import MARKER_TOKEN_FAMILIES, tool_family
from engine.tools.stream import ToolStream, finish_reason
from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    ParamsApplied,
    PromptPrepared,
    ReasoningDelta,
    Role,
    SamplingParams,
    Stats,
    TextDelta,
)

PREFILL_CHUNK = 512  # prefill in chunks so a cancel during a long prompt is noticed
# (a runner may ask for shorter runs: its ``prefill_chunk``, e.g. a dense fast-path graph's 128)


@dataclass
class _Clock:
    """Timestamps of one generation, turned into `Stats` at the end."""

    start: float
    prefill_start: float = 0.0
    first_token: float = 0.0

    def stats(self, prompt: int, cached: int, completion: int, ctx: int, dropped: int) -> Stats:
        end = time.perf_counter()
        prefill_s = max(self.first_token - self.prefill_start, 1e-9) if self.first_token else 0.0
        decode_s = end - self.first_token if self.first_token else 0.0
        return Stats(
            prompt_tokens=prompt,
            cached_prompt_tokens=cached,
            completion_tokens=completion,
            ttft_s=self.first_token - self.start if self.first_token else 0.0,
            prefill_tokens_per_s=(prompt - cached) / prefill_s if prefill_s else 0.0,
            decode_tokens_per_s=(completion - 1) / decode_s if completion > 1 and decode_s else 0.0,
            total_s=end - self.start,
            context_window=ctx,
            dropped_messages=dropped,
        )


def reserve_for_reply(params: SamplingParams, context_window: int) -> int:
    """Tokens kept free for the reply when fitting the prompt: max_new_tokens, at most half the
    window (a long max_new_tokens must not make every prompt "too long"; the loop still stops
    with LENGTH when the window fills)."""
    return min(params.max_new_tokens, context_window // 2)


def generate(
    runner: Runner,
    tokenizer: object,
    request: GenerationRequest,
    *,
    eos_ids: Collection[int],
    cancel: threading.Event | None = None,
    live: LiveParams | None = None,
    speculative: bool = False,
) -> Iterator[Event]:
    """Stream one reply to ``request`` (see the module docstring for the story).

    Emits `PromptPrepared` first, then `TextDelta`s and `ParamsApplied`s (and, for a harmony
    model such as gpt-oss, its analysis channel as `ReasoningDelta`s; `Finished.text` is then
    the final channel's text), and exactly one `Finished` last. Raises before the first event
    for bad input (ContextOverflowError, InvalidParamsError). ``token_ids`` in `Finished`
    excludes the EOS token; ``completion_tokens`` counts every sampled token, EOS included.
    Parameters come through one channel, a `LiveParams` read before every token: ``live``
    when given (the app's, moved by its sliders; its value supersedes ``request.params``),
    else one holding ``request.params``.

    ``speculative``: while the live params are greedy, next logits come from a prompt-lookup
    `DraftVerifier` (fewer forwards on copy-heavy replies; the same tokens, except where a
    multi-token run's rounding flips a near tie on the int8 fast path); a token sampled at
    temperature > 0 drops any unverified draft and extends plainly.
    """
    clock = _Clock(start=time.perf_counter())
    cancel = cancel or threading.Event()
    live = live if live is not None else LiveParams(request.params)  # one channel: the holder
    version, params = live.snapshot()
    ctx = runner.context_window

    # 1. Fit the conversation into the window (drops whole oldest turns, never silently).
    try:
        fitted = fit_context(
            tokenizer,
            request.messages,
            context_window=ctx,
            reserve_tokens=reserve_for_reply(params, ctx),
            continue_last=request.continue_last,
            thinking=request.thinking,
            cancel=cancel,  # a slow chat template is stopped by Stop too
            tools=request.tools,
            tool_choice=request.tool_choice,
        )
    except RenderCancelled:
        yield Finished(FinishReason.CANCELLED, clock.stats(0, 0, 0, ctx, 0), "")
        return
    prompt_ids = list(fitted.ids)
    # Structured output (response_format, a forced tool call): the grammar's token mask, built
    # before the first event, so a schema it cannot enforce is an InvalidParamsError; it knows
    # the prompt, so a reasoning model's thinking block comes before the JSON.
    mask = token_mask_for(tokenizer, request, eos_ids, fitted.text)
    dropped = fitted.dropped_messages

    # 2. Reuse the cached prefix; only the rest is prefilled.
    cached = reuse_prefix(runner, prompt_ids)
    yield PromptPrepared(len(prompt_ids), cached, ctx, dropped, opens_thinking(fitted.text))

    generated: list[int] = []
    # gpt-oss (harmony): its channel markers are special tokens, so they are decoded and the
    # splitter turns the analysis channel into ReasoningDeltas and the final one into text.
    harmony = (
        HarmonySplitter(resume=_reopened(request, fitted.messages))
        if is_harmony(tokenizer)
        else None
    )
    # Tools offered: calls are parsed out of the text (engine.tools) and never shown as text.
    family = tool_family(tokenizer) if request.tools and request.tool_choice != "none" else ""
    tools = (
        ToolStream(
            family, in_think=opens_thinking(fitted.text), parallel=request.parallel_tool_calls
        )
        if family
        else None
    )
    keep_special = harmony is not None or family in MARKER_TOKEN_FAMILIES  # their call markers
    detok = IncrementalDetokenizer(
        tokenizer, stop=params.stop, skip_special_tokens=not keep_special
    )
    # History for the repetition penalty: prompt + generated ids, preallocated.
    history = np.empty(len(prompt_ids) + params.max_new_tokens + 1, dtype=np.int64)
    history[: len(prompt_ids)] = prompt_ids
    n_hist = len(prompt_ids)
    rng = make_generator(params.seed)
    reason = FinishReason.LENGTH
    error: str | None = None

    try:
        # 3. Prefill the uncached suffix (chunked, so cancel is noticed on long prompts).
        clock.prefill_start = time.perf_counter()
        logits = None
        rest = prompt_ids[cached:]
        starts = list(range(0, len(rest), getattr(runner, "prefill_chunk", None) or PREFILL_CHUNK))
        if len(starts) > 1 and len(rest) - starts[-1] < 2:
            starts.pop()  # a 1-token tail joins the chunk before: 1-token runs round apart
        for start, end in zip(starts, [*starts[1:], len(rest)], strict=True):
            if cancel.is_set():
                reason = FinishReason.CANCELLED
                break
            logits = runner.extend(rest[start:end], last_only=True)[-1]  # (V,)

        # 4. Decode: one token per iteration until EOS / stop / length / cancel.
        # Not under a grammar: a draft token is verified before the mask of its position is
        # known, so the two would need the matcher's rollback; plain decoding stays exact.
        verifier = DraftVerifier(runner) if speculative and params.greedy and mask is None else None
        while logits is not None:
            if cancel.is_set():
                reason = FinishReason.CANCELLED
                break
            # Live params: a slider moved since the last token -> applies from this token on.
            new_version, new_params = live.snapshot()
            if new_version != version:
                version, params = new_version, new_params
                detok.set_stop(params.stop)
                if params.seed is not None:
                    rng = make_generator(params.seed)
                yield ParamsApplied(len(generated), params)
                if len(history) < n_hist + params.max_new_tokens + 1:
                    history = _grow(history, n_hist + params.max_new_tokens + 1)

            allowed = mask.allowed(logits.shape[-1]) if mask is not None else None  # (V,)
            token = sample_next_token(
                logits, params, history[:n_hist], rng, len(prompt_ids), allowed
            )
            if not generated:
                clock.first_token = time.perf_counter()
            generated.append(token)
            history[n_hist] = token
            n_hist += 1

            if token in eos_ids:  # all of the model's EOS / end-of-turn ids
                reason = FinishReason.STOP
                break
            if mask is not None:
                mask.advance(token)
            piece = detok.add(token)
            if piece:
                yield from _tool_deltas(
                    _deltas(piece, harmony, len(generated)), tools, harmony, len(generated)
                )
            if detok.stopped:  # a stop string completed; it is never emitted
                reason = FinishReason.STOP
                break
            if mask is not None and mask.complete:  # the grammar allows only EOS now
                reason = FinishReason.STOP
                break
            if len(generated) >= params.max_new_tokens:
                reason = FinishReason.LENGTH
                break
            if runner.context_window <= len(prompt_ids) + len(generated):  # window full
                reason = FinishReason.LENGTH
                break
            if cancel.is_set():  # checked again so a cancel never costs another forward
                reason = FinishReason.CANCELLED
                break
            # Checked per token: params are live, a slider may leave greedy mid-reply.
            if verifier is not None and params.greedy:
                logits = verifier.next_logits(token, history[:n_hist])  # (V,)
            else:
                if verifier is not None:
                    verifier.discard()
                logits = runner.extend([token], last_only=True)[0]  # (V,)
        if verifier is not None:  # the cache keeps only what the reply consumed
            verifier.discard()
    except (RuntimeError, MemoryError) as exc:
        # The cache may hold a half-written step: drop it (and any draft); keep the partial text.
        runner.reset()
        reason, error = FinishReason.ERROR, f"generation failed: {exc}"

    # 5. Flush the detokenizer's held-back text and report.
    tail = detok.finalize()
    if tail:
        yield from _tool_deltas(
            _deltas(tail, harmony, len(generated)), tools, harmony, len(generated)
        )
    if harmony is not None:
        yield from _tool_deltas(
            _deltas(None, harmony, len(generated)), tools, harmony, len(generated)
        )
    if tools is not None:  # a call cut short by length or cancel is never shown as text
        yield from tools.finish(len(generated), cut=reason != FinishReason.STOP)
    ids = tuple(generated[:-1] if generated and generated[-1] in eos_ids else generated)
    stats = clock.stats(len(prompt_ids), cached, len(generated), ctx, dropped)
    text = detok.text if harmony is None else harmony.answer  # the answer, never the markers
    if tools is None:
        yield Finished(reason, stats, text, ids, error)
        return
    text = text if harmony is not None else tools.text  # without the calls' markup
    calls = tuple(tools.calls)
    yield Finished(finish_reason(reason, tools.calls), stats, text, ids, error, calls)


def _reopened(request: GenerationRequest, messages: Sequence[Message]) -> Kind | None:
    """The harmony message a continued reply's prompt left open (see `render_prompt`)."""
    last = messages[-1] if messages else None
    if not request.continue_last or last is None or last.role != Role.ASSISTANT:
        return None
    return reopen_reply(last.reasoning, last.content)[1]


def _deltas(
    piece: str | None, harmony: HarmonySplitter | None, index: int
) -> Iterator[TextDelta | ReasoningDelta]:
    """Events for decoded ``piece`` (None: the reply ended, flush the harmony splitter)."""
    if harmony is None:
        if piece:
            yield TextDelta(piece, index)
        return
    for kind, text in harmony.feed(piece) if piece is not None else harmony.finish():
        yield ReasoningDelta(text, index) if kind == "reasoning" else TextDelta(text, index)


def _tool_deltas(
    events: Iterator[TextDelta | ReasoningDelta],
    tools: ToolStream | None,
    harmony: HarmonySplitter | None,
    token_index: int,
) -> Iterator[Event]:
    """``events`` with tool calls taken out: from the text, or (harmony) from its
    commentary channel. A harmony call whose arguments are not a JSON object stays text."""
    for event in events:
        if tools is not None and harmony is None and isinstance(event, TextDelta):
            yield from tools.feed(event.text, event.token_index)
        else:
            yield event
    if tools is None or harmony is None:
        return
    new, tools.seen_elsewhere = harmony.calls[tools.seen_elsewhere :], len(harmony.calls)
    for name, arguments in new:
        if _is_json_object(arguments):
            yield from tools.add_call(name, arguments, token_index)
        else:
            yield TextDelta(arguments, token_index)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _grow(history: np.ndarray, size: int) -> np.ndarray:
    grown = np.empty(size, dtype=np.int64)
    grown[: len(history)] = history
    return grown
