"""THE generation loop: prompt in, a stream of small frozen events out.

Owns the one story of a local generation — fit the context, reuse the cached prefix, prefill,
then per token: read the live params, pick a token, turn it into text events, check whether
the reply ended — and the finish reason and stats at the end. `generate` reads as that story;
each step is a named piece it calls, and the places the next features hook in are marked
"extension point" below:
- the prompt: `_fit` (and the grammar's token mask for structured output, `token_mask_for`);
- prefill: `_prefill` (image inputs: their embeddings join the prompt's here);
- a token: `TokenPicker.pick` (the live params, the grammar mask, the seeded sampler), and
  its log probability from the same logits when asked (`_logprob`);
- its text: `engine.reply_text.ReplyText.add` (detokenizer, harmony channels, tool calls;
  a safety review of the reply reads these events as they leave);
- the end: `_ended` (EOS, stop strings, the grammar complete, length, the window, cancel);
- the next logits: `_next_logits` (prompt-lookup or MTP speculation, else one step).
Talks only to a `Runner` (any forward implementation) and a tokenizer. Does not own the
model, the sampling filters (`engine.sampling`), detokenizing (`engine.detokenizer`), prompt
rendering and fitting (`engine.text`), prompt-lookup drafting (`engine.speculative`), or
threads: it is a plain synchronous generator, run on one worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import numpy as np

from engine.kv_cache import reuse_prefix
from engine.mtp.drafter import mtp_drafter
from engine.reply_text import ReplyText
from engine.runners.base import Runner
from engine.runners.image_rows import split_id
from engine.sampling import make_generator, sample_next_token, token_logprobs
from engine.speculative import DraftVerifier
from engine.template_sandbox import RenderCancelled
from engine.text import FittedPrompt, ImageTable, fit_context, opens_thinking
from engine.tools.grammar import TokenMask, token_mask_for
from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    ParamsApplied,
    PromptPrepared,
    SamplingParams,
    Stats,
    TokenLogprob,
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
    images: ImageTable | None = None,
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

    ``speculative``: next logits come from a prompt-lookup `DraftVerifier` (fewer forwards on
    copy-heavy replies; the same tokens, greedy or seeded: on the fast path a 1-token step
    rounds as a row of a verify run, the sampler draws one uniform a token from the same rows,
    and a runner whose ``exact_steps`` is False, a hybrid's on ONNX ops, decodes plainly).
    A sampled token that differs from the draft ends it, as a greedy one does.

    ``images``: the image ids of the messages' images (`engine.image_input.Vision.prepare`,
    which gave the runner their rows); they join the prompt at the template's image markers.
    """
    clock = _Clock(start=time.perf_counter())
    cancel = cancel or threading.Event()
    picker = TokenPicker(live if live is not None else LiveParams(request.params))
    ctx = runner.context_window

    # 1. Fit the conversation into the window (drops whole oldest turns, never silently).
    fitted = _fit(tokenizer, request, picker.params, ctx, cancel, images)
    if fitted is None:  # Stop pressed while a slow chat template rendered
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
    reply = ReplyText(tokenizer, request, fitted, picker.params.stop)
    picker.start(prompt_ids)
    generated: list[int] = []
    reason: FinishReason | None = FinishReason.LENGTH
    error: str | None = None

    try:
        # 3. Prefill the uncached suffix (chunked, so cancel is noticed on long prompts).
        clock.prefill_start = time.perf_counter()
        logits = _prefill(runner, prompt_ids[cached:], cancel)
        if cancel.is_set() and logits is None:
            reason = FinishReason.CANCELLED

        # 4. Decode: one token per iteration until EOS / stop / length / cancel.
        # Not under a grammar: a draft token is verified before the mask of its position is
        # known, so the two would need the matcher's rollback; plain decoding stays exact.
        # Nor where a 1-token step rounds apart from a verify run's rows (a hybrid's DeltaNet
        # on ONNX ops, not the kernel's: `OnnxRunner.exact_steps`): speculation must never
        # change a reply.
        # Heads wider than 128 round a run apart until its keys pass `exact_from` (64), for
        # every kind of draft.
        past_short = len(prompt_ids) >= getattr(runner, "exact_from", 0)
        exact = getattr(runner, "exact_steps", True) and past_short  # torch: no attribute
        # Qwen3.5 with an MTP block: drafts of one id from it, each verified in a 2-row run,
        # which rounds as two decode steps there (`engine.mtp`); the ledger stops it where it
        # does not pay.
        # Greedy or sampled alike: the loop draws from the same rows, one uniform a token, so a
        # seeded reply is the same either way and an unseeded one has the same distribution.
        drafter = mtp_drafter(runner) if speculative and past_short else None
        drafting = speculative and mask is None and (exact or drafter is not None)
        verifier = DraftVerifier(runner, drafter=drafter) if drafting else None
        while logits is not None:
            if cancel.is_set():
                reason = FinishReason.CANCELLED
                break
            # Live params: a slider moved since the last token -> applies from this token on.
            applied = picker.refresh(len(generated))
            if applied is not None:
                reply.set_stop(applied.params.stop)
                yield applied
            token = picker.pick(logits, mask)
            if not generated:
                clock.first_token = time.perf_counter()
            generated.append(token)
            if token in eos_ids:  # all of the model's EOS / end-of-turn ids
                reason = FinishReason.STOP
                break
            if request.logprobs is not None:  # before the token's text, as OpenAI pairs them
                yield _logprob(tokenizer, logits, token, request.logprobs, len(generated))
            if mask is not None:
                mask.advance(token)
            yield from reply.add(token, len(generated))
            reason = _ended(reply, mask, picker.params, runner, len(prompt_ids) + len(generated),
                            len(generated), cancel)  # fmt: skip
            if reason is not None:
                break
            logits = _next_logits(runner, verifier, token, picker)
        if verifier is not None:  # the cache keeps only what the reply consumed
            verifier.discard()
    except (RuntimeError, MemoryError) as exc:
        # The cache may hold a half-written step: drop it (and any draft); keep the partial text.
        runner.reset()
        reason, error = FinishReason.ERROR, f"generation failed: {exc}"
    except Exception:
        runner.reset()  # a bug past the sampler (a reply parser's) leaves no half-written step
        raise

    # 5. Flush the held-back text and report.
    reason = reason or FinishReason.LENGTH
    yield from reply.flush(len(generated), cut=reason != FinishReason.STOP)
    ids = tuple(generated[:-1] if generated and generated[-1] in eos_ids else generated)
    stats = clock.stats(len(prompt_ids), cached, len(generated), ctx, dropped)
    yield reply.finished(reason, stats, ids, error)


def _fit(
    tokenizer: object,
    request: GenerationRequest,
    params: SamplingParams,
    ctx: int,
    cancel: threading.Event,
    images: ImageTable | None = None,
) -> FittedPrompt | None:
    """The prompt fitted into ``ctx`` tokens with room for the reply; None if Stop interrupted
    the chat template's rendering."""
    try:
        return fit_context(
            tokenizer,
            request.messages,
            context_window=ctx,
            reserve_tokens=reserve_for_reply(params, ctx),
            continue_last=request.continue_last,
            thinking=request.thinking,
            cancel=cancel,  # a slow chat template is stopped by Stop too
            tools=request.tools,
            tool_choice=request.tool_choice,
            images=images,
        )
    except RenderCancelled:
        return None


def _prefill(runner: Runner, rest: list[int], cancel: threading.Event) -> np.ndarray | None:
    """Run the uncached prompt ids through the runner in chunks; the last position's logits
    (V,), or None when cancelled before the last chunk (or nothing was left to run).
    Image ids (negative) run as their image's rows; a chunk never ends inside an image (Gemma's
    image tokens attend to each other both ways, so an image runs whole). A runner with
    ``advance`` (`engine.runners.onnx_runner.OnnxRunner`) runs the chunks before the last
    without its output head, whose logits would be thrown away."""
    logits = None
    starts = list(range(0, len(rest), getattr(runner, "prefill_chunk", None) or PREFILL_CHUNK))
    starts = sorted({max(0, _image_start(rest, s)) for s in starts})
    if len(starts) > 1 and len(rest) - starts[-1] < 2:
        starts.pop()  # a 1-token tail joins the chunk before: 1-token runs round apart
    advance = getattr(runner, "advance", None)
    for start, end in zip(starts, [*starts[1:], len(rest)], strict=True):
        if cancel.is_set():
            break
        if advance is not None and end < len(rest):
            advance(rest[start:end])
        else:
            logits = runner.extend(rest[start:end], last_only=True)[-1]  # (V,)
    return logits


def _image_start(ids: list[int], at: int) -> int:
    """``at``, or the start of the image whose tokens it falls inside."""
    if at < len(ids) and ids[at] < 0:
        return at - split_id(ids[at])[1]
    return at


class TokenPicker:
    """The live params, the seeded generator and the repetition history of one reply.

    `refresh` reads the `LiveParams` before each token; `pick` applies the grammar's mask and
    samples (`engine.sampling.sample_next_token`), then records the token in the history.
    Extension point: per-token log probabilities come from the same logits in `pick`."""

    def __init__(self, live: LiveParams) -> None:
        self.live = live
        self.version, self.params = live.snapshot()
        self.rng = make_generator(self.params.seed)
        self.history = np.empty(0, dtype=np.int64)
        self.n_hist = 0
        self.prompt_len = 0

    def start(self, prompt_ids: list[int]) -> None:
        """History for the repetition penalty: prompt + generated ids, preallocated."""
        self.history = np.empty(len(prompt_ids) + self.params.max_new_tokens + 1, dtype=np.int64)
        self.history[: len(prompt_ids)] = prompt_ids
        self.n_hist = self.prompt_len = len(prompt_ids)

    def refresh(self, generated: int) -> ParamsApplied | None:
        """The new params if a slider moved since the last token (they apply from this one)."""
        version, params = self.live.snapshot()
        if version == self.version:
            return None
        self.version, self.params = version, params
        if params.seed is not None:
            self.rng = make_generator(params.seed)
        if len(self.history) < self.n_hist + params.max_new_tokens + 1:
            self.history = _grow(self.history, self.n_hist + params.max_new_tokens + 1)
        return ParamsApplied(generated, params)

    def pick(self, logits: np.ndarray, mask: TokenMask | None) -> int:
        """The next token from ``logits`` (V,), within the grammar's mask when there is one."""
        allowed = mask.allowed(logits.shape[-1]) if mask is not None else None  # (V,)
        seen = self.history[: self.n_hist]
        token = sample_next_token(logits, self.params, seen, self.rng, self.prompt_len, allowed)
        self.history[self.n_hist] = token
        self.n_hist += 1
        return token

    @property
    def seen(self) -> np.ndarray:
        """Prompt and reply ids so far (the speculative drafter looks them up)."""
        return self.history[: self.n_hist]


def _ended(
    reply: ReplyText,
    mask: TokenMask | None,
    params: SamplingParams,
    runner: Runner,
    used: int,
    generated: int,
    cancel: threading.Event,
) -> FinishReason | None:
    """Why the reply ends after this (non-EOS) token, or None: it goes on."""
    if reply.stopped:  # a stop string completed; it is never emitted
        return FinishReason.STOP
    if mask is not None and mask.complete:  # the grammar allows only EOS now
        return FinishReason.STOP
    if generated >= params.max_new_tokens:
        return FinishReason.LENGTH
    if runner.context_window <= used:  # the window is full
        return FinishReason.LENGTH
    if cancel.is_set():  # checked again so a cancel never costs another forward
        return FinishReason.CANCELLED
    return None


def _next_logits(
    runner: Runner, verifier: DraftVerifier | None, token: int, picker: TokenPicker
) -> np.ndarray:
    """The logits (V,) after ``token``: from the draft verifier when speculating (its rows are
    the model's own logits for the reply so far, whatever the live params pick from them),
    else one step."""
    if verifier is not None:
        logits: np.ndarray = verifier.next_logits(token, picker.seen)  # (V,)
        return logits
    logits = runner.extend([token], last_only=True)[0]  # (V,)
    return logits


def _logprob(
    tokenizer: object, logits: np.ndarray, token: int, top: int, index: int
) -> TokenLogprob:
    """The `TokenLogprob` of ``token`` drawn from ``logits`` (V,), with ``top`` alternatives,
    each token decoded alone."""
    decode = getattr(tokenizer, "decode")  # noqa: B009 - the tokenizer is duck-typed here
    logprob, best = token_logprobs(logits, token, top)
    alternatives = tuple((str(decode([i])), lp) for i, lp in best)
    return TokenLogprob(index, token, str(decode([token])), logprob, alternatives)


def _grow(history: np.ndarray, size: int) -> np.ndarray:
    grown = np.empty(size, dtype=np.int64)
    grown[: len(history)] = history
    return grown
