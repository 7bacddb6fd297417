"""Beam search (``num_beams > 1``): non-streaming, the whole reply at once.

Owns running a beam search and turning the result into the same events as streaming:
PromptPrepared, one TextDelta with the full text (a harmony model's thinking before it, as one
ReasoningDelta), Finished. On the ONNX fast path the beams run as the rows of batched decode
steps over the loaded session (`engine.beam_fast`: no torch, no second copy of the weights);
otherwise (a torch or CUDA runner, or an architecture batching refuses) transformers' own beam
search runs (``generate(num_beams=N, do_sample=False)``) on the torch model, loaded on first use,
with a stopping criterion that honours the cancel event. Both give the same ids for the same
logits. Only the parameters whose `engine.params` row says ``beam=True`` apply (the repetition
penalty, max tokens, stop strings); temperature, top-k, top-p, min-p, the presence and frequency
penalties and the seed do not. Does not reuse the prefix cache (beam search keeps N sequences).
torch and transformers are imported when a torch beam search runs, never by importing this
module (the fast path runs without them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.beam_fast import BeamSettings, fast_beam_ids
from engine.generate import reserve_for_reply
from engine.harmony import is_harmony, split_harmony
from engine.params import PARAMS
from engine.runners.batched import BatchedDecoder, batch_refusal
from engine.text import fit_context
from engine.types import (
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    PromptPrepared,
    ReasoningDelta,
    SamplingParams,
    Stats,
    TextDelta,
)

if TYPE_CHECKING:
    from engine.loader import LoadedModel
    from engine.runners.base import Runner
    from engine.runners.batched import BatchedDecoder


# The table's ``beam=True`` rows (`engine.params`) decide what beam search honours: stop strings
# are cut after generate() and max tokens capped by the context (both in `beam_generate`); every
# other such row is a generate() argument of the same name. Rows without it are left out.
BEAM_PARAMS = frozenset(p.name for p in PARAMS if p.beam)
APPLIED_AROUND = frozenset({"stop", "max_new_tokens"})
GENERATE_ARGS = BEAM_PARAMS - APPLIED_AROUND


def beam_kwargs(params: SamplingParams, eos_ids: frozenset[int], max_new: int) -> dict[str, Any]:
    """The transformers generate() arguments this engine uses for beam search."""
    return {
        **{name: getattr(params, name) for name in sorted(GENERATE_ARGS)},
        "do_sample": False,
        "max_new_tokens": max_new,
        "eos_token_id": sorted(eos_ids),
        "pad_token_id": min(eos_ids) if eos_ids else 0,
    }


def beam_generate(
    loaded: LoadedModel,
    request: GenerationRequest,
    params: SamplingParams,
    cancel: threading.Event,
    runner: Runner | None = None,
) -> Iterator[Event]:
    """Events for a beam-search reply (see the module docstring); ``runner`` is the engine's
    forward: a fast-path one runs the beams itself."""
    start = time.perf_counter()
    ctx = loaded.context_window
    fitted = fit_context(
        loaded.tokenizer,
        request.messages,
        context_window=ctx,
        reserve_tokens=reserve_for_reply(params, ctx),
        continue_last=request.continue_last,
    )
    prompt = list(fitted.ids)
    dropped = fitted.dropped_messages
    yield PromptPrepared(len(prompt), 0, ctx, dropped)
    max_new = min(params.max_new_tokens, ctx - len(prompt))
    decoder = _fast_decoder(runner, params.num_beams, len(prompt) + max_new)
    if decoder is not None:
        penalty = params.repetition_penalty
        settings = BeamSettings(params.num_beams, max_new, loaded.eos_ids, penalty)
        ids = fast_beam_ids(decoder, prompt, settings, cancel)
    else:
        kwargs = beam_kwargs(params, loaded.eos_ids, max_new)
        ids = _run_beams(loaded.model, prompt, kwargs, cancel)
    reply, reason = _finish_reason(ids, loaded.eos_ids, max_new, cancel)
    harmony = is_harmony(loaded.tokenizer)  # gpt-oss: its channel markers split the reply
    decoded, stopped = _cut_at_stop(
        loaded.tokenizer.decode(reply, skip_special_tokens=not harmony), params.stop
    )
    if stopped:
        reason = FinishReason.STOP
    elapsed = time.perf_counter() - start
    thinking, answer = split_harmony(decoded) if harmony else ("", decoded)
    if thinking:
        yield ReasoningDelta(thinking, len(ids))
    if answer:
        yield TextDelta(answer, len(ids))
    stats = Stats(
        prompt_tokens=len(prompt),
        completion_tokens=len(ids),
        ttft_s=elapsed,
        decode_tokens_per_s=len(ids) / elapsed if elapsed else 0.0,
        total_s=elapsed,
        context_window=ctx,
        dropped_messages=dropped,
    )
    yield Finished(reason, stats, answer, tuple(reply))


def _fast_decoder(runner: Runner | None, beams: int, tokens: int) -> BatchedDecoder | None:
    """Batched KV slots on ``runner``'s fast-path session for ``beams`` beams of ``tokens``
    tokens; None where that cannot run (another backend, an architecture batching refuses, or
    a sequence longer than the slots' memory budget allows)."""
    if runner is None or runner.backend != "onnx":
        return None

    if batch_refusal(runner):
        return None
    decoder = BatchedDecoder(runner, slots=beams)  # type: ignore[arg-type]
    return decoder if tokens <= decoder.context_window else None


def _run_beams(
    model: Any, prompt: list[int], kwargs: dict[str, Any], cancel: threading.Event
) -> list[int]:
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class CancelCriterion(StoppingCriteria):
        """Stops every beam as soon as the cancel event is set (checked once per step)."""

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), cancel.is_set(), dtype=torch.bool)

    input_ids = torch.tensor([prompt], dtype=torch.long, device=model.device)  # (1, T)
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            stopping_criteria=StoppingCriteriaList([CancelCriterion()]),
            **kwargs,
        )
    return [int(i) for i in out[0, len(prompt) :]]


def _finish_reason(
    ids: list[int], eos_ids: frozenset[int], max_new: int, cancel: threading.Event
) -> tuple[list[int], FinishReason]:
    """The reply without EOS/padding, and why it ended."""
    for i, token in enumerate(ids):
        if token in eos_ids:
            return ids[:i], FinishReason.STOP
    if cancel.is_set():
        return ids, FinishReason.CANCELLED
    return ids, FinishReason.LENGTH if len(ids) >= max_new else FinishReason.STOP


def _cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to the first stop string (excluded), and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
