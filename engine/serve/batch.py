"""Continuous batching for the local server: many requests decoding in one graph run per token.

Owns the per-request story of `engine.generate.generate`, cut at token boundaries so requests
can join and leave a running batch: fit the prompt, reuse the longest cached prefix of any idle
slot, prefill in chunks (at most ``PREFILL_BUDGET`` prompt tokens per round, so a long prompt
does not stall the others' decode for more than one chunk), then one batched decode step per
round for every decoding request (`engine.runners.batched.BatchedDecoder`), each with its own
sampling parameters, seed, repetition history, stop strings, EOS, max tokens and cancel event.
Events are the same small frozen values the engine's loop yields (PromptPrepared, TextDelta...,
Finished), put on each job's queue.

Fair service and memory: waiting requests are kept per client (`engine.serve.worker`'s key: the
peer address and API key) and admitted round-robin; while others wait, no client holds more
than its share of the slots, and a lone client leaves a slot free (``RESERVED_SLOTS``) so a
newcomer is admitted at the next round instead of behind every one of its replies. Prefill runs
round-robin by client too, so one client's long prompts do not hold another's short prompt. A
request is admitted only when the slots' K/V, grown for it to the longest live request's prompt
plus its ``max_tokens``, fits the decoder's memory check (`BatchedDecoder.fits`); else it waits
for others to leave, or, when nothing else runs, is refused with InsufficientMemoryError. When
requests leave, the decoder lets go of their rows (`BatchedDecoder.shrink`).

Greedy determinism: a batched row computes exactly the single-sequence 1-token step, and a
prefill never runs a lone token (a run of one token takes another attention path than a longer
one, and rounds differently): a fully cached prompt recomputes its last two tokens, a prompt is
cut into chunks whose last has at least two tokens, and only K/V written by prefill runs are
kept for reuse (a finished request's slot is cropped back to its prompt). So a request's tokens
do not depend on which others share its batch, nor on how much of its prompt was cached.

Does not own threads, sockets or which requests may be batched (`engine.serve.worker`), nor the
harmony channels, tools, beams or speculative decoding (those requests run on the engine's own
loop, one at a time).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from engine.detokenizer import IncrementalDetokenizer
from engine.errors import InsufficientMemoryError
from engine.generate import reserve_for_reply
from engine.harmony import is_harmony
from engine.kv_cache import common_prefix_length
from engine.runners.batched import BatchedDecoder
from engine.sampling import make_generator, sample_next_token
from engine.text import fit_context, opens_thinking
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    PromptPrepared,
    SamplingParams,
    Stats,
    TextDelta,
)

PREFILL_CHUNK = 128  # prompt tokens per prefill run
PREFILL_BUDGET = 128  # prompt tokens prefilled per round, across requests, between decode steps
RESERVED_SLOTS = 1  # a lone client leaves this many slots to a newcomer (from 3 slots up;
# the worker makes its decoder that much larger than HEARTH_BATCH_SLOTS, so one client still
# gets all of those)


def batchable(request: GenerationRequest, tokenizer: Any) -> bool:
    """Whether the batch can run ``request``: plain sampling of plain text (no beams, tools,
    structured output, log probabilities, harmony channels or images, which the engine's own loop
    handles)."""
    return (
        request.params.num_beams == 1
        and not request.tools
        and request.response_format is None
        and request.logprobs is None
        and not is_harmony(tokenizer)
        and not any(m.images for m in request.messages)  # images: the engine's own loop
    )


class BatchJob(Protocol):
    """What the scheduler needs of a server job (`engine.serve.worker.Job`)."""

    cancel: threading.Event

    def emit(self, item: object) -> None: ...  # an event, an exception, or the end

    def end(self) -> None: ...


@dataclass(eq=False)
class _Sequence:
    """One request in the batch: its slot, prompt, sampling state and reply so far."""

    job: BatchJob
    client: str
    planned: int  # the most tokens it may hold: prompt + max_tokens, within the window
    slot: int
    prompt: list[int]
    done: int  # prompt tokens whose K/V are in the slot
    cached: int  # of them, reused from an earlier request
    params: SamplingParams
    detok: IncrementalDetokenizer
    rng: np.random.Generator | None
    history: np.ndarray  # (prompt + max_new_tokens + 1,) int64: prompt + generated ids
    start: float
    prefill_start: float = 0.0
    first_token: float = 0.0
    generated: list[int] = field(default_factory=list)
    pending: int | None = None  # sampled, not yet run through the model

    @property
    def prefilling(self) -> bool:
        return self.done < len(self.prompt)


class BatchScheduler:
    """Requests sharing one `BatchedDecoder`; ``step`` runs one round on the engine thread."""

    def __init__(
        self,
        decoder: BatchedDecoder,
        tokenizer: Any,
        eos_ids: Collection[int],
        fit: Callable[[GenerationRequest], GenerationRequest],
    ) -> None:
        self.decoder = decoder
        self.tokenizer = tokenizer
        self.eos_ids = frozenset(eos_ids)
        self._fit = fit  # the worker's window check and max_tokens clamp
        self._lock = threading.Lock()
        self._waiting: dict[str, deque[tuple[BatchJob, GenerationRequest]]] = {}  # by client
        self._running: list[_Sequence] = []  # admission order
        self._turn = 0  # rounds run: whose turn it is, in admission and prefill
        self.pumping = False  # the worker's: a round of this batch is queued on its executor

    def add(self, job: BatchJob, request: GenerationRequest, client: str = "") -> None:
        """Queue a request (any thread) in its client's line; it joins at a later round."""
        with self._lock:
            self._waiting.setdefault(client, deque()).append((job, request))

    def busy(self) -> bool:
        with self._lock:
            return bool(self._waiting or self._running)

    def running(self) -> int:
        return len(self._running)

    def waiting(self) -> int:
        with self._lock:
            return sum(len(line) for line in self._waiting.values())

    def step(self) -> None:
        """One round: admit, prefill up to the budget, one decode step for the rest."""
        self._turn += 1
        self._admit()
        try:
            self._prefill()
            self._decode()
        except (RuntimeError, MemoryError, InsufficientMemoryError) as exc:  # half a step held
            for seq in list(self._running):
                self.decoder.crop(seq.slot, 0)
                self._finish(seq, FinishReason.ERROR, f"generation failed: {exc}")

    def fail_all(self, exc: BaseException) -> None:
        """Report ``exc`` to every request (the scheduler itself broke)."""
        with self._lock:
            waiting = [job for line in self._waiting.values() for job, _ in line]
            self._waiting = {}
        for job in waiting + [s.job for s in self._running]:
            job.emit(exc)
            job.end()
        self._running.clear()

    # ---- joining ------------------------------------------------------------------------

    def _share(self, client: str) -> int:
        """How many slots ``client`` may hold now: an equal share while others wait or run,
        all but ``RESERVED_SLOTS`` when it is alone."""
        with self._lock:
            clients = {c for c, line in self._waiting.items() if line}
        clients |= {seq.client for seq in self._running}
        slots = self.decoder.slots
        if len(clients - {client}) > 0:
            return max(1, slots // len(clients | {client}))
        return slots - RESERVED_SLOTS if slots >= 3 else slots

    def _next(self) -> tuple[str, BatchJob, GenerationRequest] | None:
        """The next waiting request, taking clients in turn, skipping a client at its share."""
        held: dict[str, int] = {}
        for seq in self._running:
            held[seq.client] = held.get(seq.client, 0) + 1
        with self._lock:
            clients = [c for c, line in self._waiting.items() if line]
        if not clients:
            return None
        start = self._turn % len(clients)
        for client in clients[start:] + clients[:start]:
            if held.get(client, 0) >= self._share(client):
                continue
            with self._lock:
                line = self._waiting[client]
                job, request = line.popleft()
                if not line:
                    del self._waiting[client]  # a new line goes to the back of the turn order
            return client, job, request
        return None

    def _admit(self) -> None:
        while len(self._running) < self.decoder.slots:
            chosen = self._next()
            if chosen is None:
                return
            client, job, request = chosen
            if job.cancel.is_set():  # its client left while it waited
                job.end()
                continue
            try:
                seq = self._start(job, client, self._fit(request))
            except _Wait:  # not enough memory while others run: first in its line again
                with self._lock:
                    line = self._waiting.pop(client, deque())
                    line.appendleft((job, request))
                    self._waiting = {client: line, **self._waiting}
                return
            except Exception as exc:  # a bad request: reported to its client only
                job.emit(exc)
                job.end()
                continue
            self._running.append(seq)

    def _start(self, job: BatchJob, client: str, request: GenerationRequest) -> _Sequence:
        start = time.perf_counter()
        params, window = request.params, self.decoder.context_window
        fitted = fit_context(
            self.tokenizer, request.messages, context_window=window,
            reserve_tokens=reserve_for_reply(params, window),
            continue_last=request.continue_last, thinking=request.thinking,
        )  # fmt: skip
        prompt = list(fitted.ids)
        planned = min(len(prompt) + params.max_new_tokens + 1, window)
        self._check_memory(planned)
        slot, cached = self._slot_for(prompt)
        job.emit(
            PromptPrepared(len(prompt), cached, window, fitted.dropped_messages,
                           opens_thinking(fitted.text))
        )  # fmt: skip
        history = np.empty(len(prompt) + params.max_new_tokens + 1, dtype=np.int64)
        history[: len(prompt)] = prompt
        detok = IncrementalDetokenizer(self.tokenizer, stop=params.stop)
        rng = make_generator(params.seed)
        return _Sequence(
            job, client, planned, slot, prompt, cached, cached, params, detok, rng, history, start
        )

    def _check_memory(self, planned: int) -> None:
        """Whether the slots' K/V can grow for one more request that may hold ``planned``
        tokens: raises _Wait while others run, InsufficientMemoryError when it would not fit
        even alone."""
        used = {seq.slot for seq in self._running}
        target = min(s for s in range(self.decoder.slots) if s not in used)
        rows = max([target, *used]) + 1
        longest = max([planned, *(seq.planned for seq in self._running)])
        if not self.decoder.fits(rows, longest):
            return
        if self._running:
            raise _Wait
        refusal = self.decoder.fits(1, planned)
        if refusal:
            raise InsufficientMemoryError(
                f"this request cannot be served now: {refusal}; ask for fewer max_tokens or a "
                "shorter prompt, or retry when the machine has more memory free"
            )

    def _slot_for(self, prompt: list[int]) -> tuple[int, int]:
        """The lowest free slot, holding the longest cached prefix of ``prompt`` found in any
        free slot (moved there), cropped so at least two prompt tokens are left to run."""
        used = {seq.slot for seq in self._running}
        free = [s for s in range(self.decoder.slots) if s not in used]
        target = free[0]  # the lowest: decode steps run over slots 0..highest busy one
        cached = {s: self.decoder.cached_ids(s) for s in free}
        # The longest shared prefix; among equals, the slot with the least to lose (an empty one
        # before one holding another conversation a later request may continue).
        best = max(free, key=lambda s: (common_prefix_length(cached[s], prompt), -len(cached[s])))
        keep = common_prefix_length(cached[best], prompt)
        self.decoder.swap(best, target)  # what target held moves to best's slot, kept
        keep = max(0, min(keep, len(prompt) - 2))
        self.decoder.crop(target, min(keep, len(self.decoder.cached_ids(target))))
        return target, keep

    # ---- prefill and decode -------------------------------------------------------------

    def _prefill(self) -> None:
        budget = PREFILL_BUDGET
        for seq in self._prefill_order():
            if budget <= 0:
                return
            if seq.job.cancel.is_set():
                self._finish(seq, FinishReason.CANCELLED)
                continue
            if not seq.prefill_start:
                seq.prefill_start = time.perf_counter()
            size = _chunk(len(seq.prompt) - seq.done, min(PREFILL_CHUNK, budget))
            logits = self.decoder.prefill(seq.slot, seq.prompt[seq.done : seq.done + size])
            seq.done += size
            budget -= size
            if not seq.prefilling:
                self._take(seq, logits)

    def _prefill_order(self) -> list[_Sequence]:
        """The prefilling requests, clients taking turns (the first client rotating each round)
        and each client's in admission order: one client's long prompts never hold another's."""
        lines: dict[str, list[_Sequence]] = {}
        for seq in self._running:
            if seq.prefilling:
                lines.setdefault(seq.client, []).append(seq)
        if not lines:
            return []
        order = list(lines.values())
        start = self._turn % len(order)
        order = order[start:] + order[:start]
        return [
            line[i] for i in range(max(len(x) for x in order)) for line in order if i < len(line)
        ]

    def _decode(self) -> None:
        for seq in [s for s in self._running if s.pending is not None]:
            if seq.job.cancel.is_set():
                self._finish(seq, FinishReason.CANCELLED)
        rows = [s for s in self._running if s.pending is not None]
        if not rows:
            return
        tokens: list[int | None] = [None] * (max(s.slot for s in rows) + 1)
        for seq in rows:
            tokens[seq.slot] = seq.pending
        logits = self.decoder.decode(tokens)  # (n, V)
        for seq in rows:
            seq.pending = None
            self._take(seq, logits[seq.slot])

    def _take(self, seq: _Sequence, logits: np.ndarray) -> None:
        """Sample the next token from ``logits`` (V,) and apply every stop condition."""
        n_hist = len(seq.prompt) + len(seq.generated)
        token = sample_next_token(
            logits, seq.params, seq.history[:n_hist], seq.rng, len(seq.prompt)
        )
        if not seq.generated:
            seq.first_token = time.perf_counter()
        seq.generated.append(token)
        seq.history[n_hist] = token
        if token in self.eos_ids:
            return self._finish(seq, FinishReason.STOP)
        piece = seq.detok.add(token)
        if piece:
            seq.job.emit(TextDelta(piece, len(seq.generated)))
        if seq.detok.stopped:  # a stop string completed; it is never emitted
            return self._finish(seq, FinishReason.STOP)
        full = len(seq.prompt) + len(seq.generated) >= self.decoder.context_window
        if len(seq.generated) >= seq.params.max_new_tokens or full:
            return self._finish(seq, FinishReason.LENGTH)
        if seq.job.cancel.is_set():
            return self._finish(seq, FinishReason.CANCELLED)
        seq.pending = token

    def _finish(self, seq: _Sequence, reason: FinishReason, error: str | None = None) -> None:
        """The request leaves the batch; its slot keeps the prompt's cache for a later prefix
        match, not the reply's: K/V written by 1-token decode steps round differently from a
        prefill's, so a next turn re-prefills the reply, as a cold start would."""
        self._running.remove(seq)
        self.decoder.crop(seq.slot, min(seq.done, len(self.decoder.cached_ids(seq.slot))))
        if not self._running and seq.slot:  # the last one out keeps its prompt, in row 0
            self.decoder.swap(seq.slot, 0)
        self.decoder.shrink(max((s.slot for s in self._running), default=0) + 1)
        tail = seq.detok.finalize()
        if tail:
            seq.job.emit(TextDelta(tail, len(seq.generated)))
        ids = seq.generated
        ids = ids[:-1] if ids and ids[-1] in self.eos_ids else ids
        seq.job.emit(
            Finished(
                reason, _stats(seq, self.decoder.context_window), seq.detok.text, tuple(ids), error
            )
        )
        seq.job.end()


class _Wait(Exception):
    """A request that fits alone but not beside the running ones: it waits for them to leave."""


def _chunk(remaining: int, most: int) -> int:
    """How many prompt tokens the next prefill run takes: at most ``most``, and never leaving a
    lone last token (a 1-token run takes the decode path and rounds differently)."""
    size = min(remaining, max(most, 2))
    if remaining - size == 1:
        size = size - 1 if size > 2 else remaining
    return size


def _stats(seq: _Sequence, window: int) -> Stats:
    end = time.perf_counter()
    prompt, completion = len(seq.prompt), len(seq.generated)
    prefill_s = seq.first_token - seq.prefill_start if seq.first_token else 0.0
    decode_s = end - seq.first_token if seq.first_token else 0.0
    return Stats(
        prompt_tokens=prompt,
        cached_prompt_tokens=seq.cached,
        completion_tokens=completion,
        ttft_s=seq.first_token - seq.start if seq.first_token else 0.0,
        prefill_tokens_per_s=(prompt - seq.cached) / prefill_s if prefill_s > 0 else 0.0,
        decode_tokens_per_s=(completion - 1) / decode_s if completion > 1 and decode_s else 0.0,
        total_s=end - seq.start,
        context_window=window,
    )
