"""The safety review around one turn: the prompt checked before generation, the reply while it
streams, and an optional safety system prompt.

Owns `SafetyOptions` (what a chat, the server or the CLI asked for), `SafetyReview` (the
blocklist and the guard behind one check per stage) and `SafetyReview.review`, a tap over a
backend's event stream:

1. The user's last turn is checked: the blocklist first (no model), then the guard in
   Qwen3Guard's prompt format. A flag ends the turn before any token is generated: one
   `Finished` with reason CONTENT_FILTER and the verdict (its category named).
2. The safety system prompt, when set, is put before the conversation's own.
3. The reply is checked as it streams (`engine.safety.reply_review`): deltas are passed on only
   once checked, so on a flag the generation is closed, nothing flagged has been shown, and the
   `Finished` (CONTENT_FILTER) holds only the text shown before it.

A guard that cannot answer (`GuardUnavailableError`) ends the turn with reason ERROR when
``required``; otherwise the turn goes on unreviewed by the guard (the blocklist still applies)
and the final `Finished` carries an "Unreviewed" verdict saying why. Thinking sent apart
(`ReasoningDelta`) and tool calls pass through; thinking inside the text is reviewed with it.
Does not own the guard's backend (`engine.safety.guard`) or the stream below it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from engine.cpus import usable_cores
from engine.errors import GuardUnavailableError
from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard
from engine.safety.qwen3guard import flags
from engine.safety.reply_review import Pace, ReplyReview
from engine.types import (
    Backend,
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    ModelInfo,
    PromptPrepared,
    SafetyVerdict,
    Stats,
    TextDelta,
)

Generate = Callable[[GenerationRequest], Iterator[Event]]

SAFETY_SYSTEM_PROMPT = (
    "You are a helpful assistant for a general audience, including children. Refuse, briefly "
    "and kindly, to help with anything violent, sexual, illegal, hateful or self-harming, or "
    "with sharing people's private information; offer a safe alternative where there is one."
)


@dataclass(frozen=True, slots=True)
class SafetyOptions:
    """What the review does. ``strict``: Controversial flags too. ``required``: a guard that
    cannot answer stops the turn. ``system_prompt``: put before the conversation ("" for
    none)."""

    prompts: bool = True
    replies: bool = True
    strict: bool = False
    required: bool = False
    system_prompt: str = ""
    pace: Pace = field(default_factory=Pace)
    # Run the guard's reply checks on a thread of their own while the reply goes on (text is
    # still shown only once checked). Off by default, so a review is deterministic unless
    # asked; `overlap_helps` says when to ask (docs/safety.md has the figures).
    overlap: bool = False


def overlap_helps(cores: int | None = None) -> bool:
    """Whether overlapped checks should pay here: with 4 cores or more. On 2 busy cores they
    made the bundled model's reviewed reply 1.7x faster but a guard-sized chat model's 3x
    slower (the two models fought for the cores)."""
    return (cores if cores is not None else usable_cores()) >= 4


class SafetyReview:
    """A guard (or None) and a blocklist, applied as ``options`` say."""

    def __init__(
        self,
        guard: Guard | None = None,
        blocklist: Blocklist | None = None,
        options: SafetyOptions | None = None,
    ) -> None:
        self.guard = guard
        self.blocklist = blocklist or Blocklist()
        self.options = options or SafetyOptions()
        self._guard_down = ""  # why the guard failed in this turn (then it is not asked again)
        # With overlap, every guard call runs on this one thread (a model has one owner).
        self._thread: ThreadPoolExecutor | None = None
        if self.options.overlap and guard is not None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="hearth-guard")

    def check(self, user: str, reply: str | None = None) -> SafetyVerdict:
        """The verdict on the user's turn (``reply`` None) or on the reply so far: the
        blocklist's when it matches, else the guard's. Raises GuardUnavailableError only when
        the review is ``required``."""
        stage = "prompt" if reply is None else "reply"
        listed = self.blocklist.check(user if reply is None else reply, stage)
        if self.flags(listed) or self.guard is None:
            return listed
        if self._guard_down:
            return _unreviewed(stage, self._guard_down)
        try:
            return self.guard.check(user, reply)
        except GuardUnavailableError as exc:
            if self.options.required:
                raise
            self._guard_down = str(exc)
            return _unreviewed(stage, self._guard_down)

    def flags(self, verdict: SafetyVerdict) -> bool:
        return flags(verdict, self.options.strict)

    def check_question(self, text: str) -> SafetyVerdict:
        """`check` of a question, on the guard's own thread when it has one (the server's
        /v1/moderations: a reply's check may still be running there)."""
        return self._on_guard_thread(lambda: self.check(text))

    def close(self) -> None:
        """Close the guard (and its thread)."""
        if self._thread is not None:
            self._thread.submit(self._close_guard).result()
            self._thread.shutdown()
        else:
            self._close_guard()

    def _close_guard(self) -> None:
        if self.guard is not None:
            self.guard.close()

    def _on_guard_thread(self, fn: Callable[[], SafetyVerdict]) -> SafetyVerdict:
        return self._thread.submit(fn).result() if self._thread is not None else fn()

    def review(self, request: GenerationRequest, generate: Generate) -> Iterator[Event]:
        """``generate(request)``'s events, reviewed (see the module docstring)."""
        self._guard_down = ""
        user = _last_user_text(request)
        prompt_verdict: SafetyVerdict | None = None
        if self.options.prompts and user:
            try:
                prompt_verdict = self.check_question(user)
            except GuardUnavailableError as exc:
                yield _refused(exc, "prompt")
                return
            if self.flags(prompt_verdict):
                yield Finished(FinishReason.CONTENT_FILTER, Stats(), "", safety=prompt_verdict)
                return
        request = self._with_system_prompt(request)
        if not (self.options.replies and (self.guard is not None or self.blocklist)):
            yield from _stamped(generate(request), prompt_verdict)
            return
        submit = self._thread.submit if self._thread is not None else None
        review = ReplyReview(
            lambda reply: self.check(user, reply), self.flags, self.options.pace, submit
        )
        yield from _reviewed(generate(request), review, prompt_verdict)

    def _with_system_prompt(self, request: GenerationRequest) -> GenerationRequest:
        text = self.options.system_prompt
        if not text:
            return request
        messages = list(request.messages)
        if messages and messages[0].role == "system":
            first = messages[0]
            messages[0] = dataclasses.replace(first, content=f"{text}\n\n{first.content}")
        else:
            messages.insert(0, Message("system", text))
        return dataclasses.replace(request, messages=tuple(messages))


class ReviewedBackend:
    """A `Backend` whose every generation goes through ``review`` (the server's and the CLI's
    way to review every request). It has no ``runner``, so the server runs its requests one at
    a time rather than batched: a review sits between the tokens and the client."""

    def __init__(self, backend: Backend, review: SafetyReview) -> None:
        self.backend = backend
        self.review = review

    @property
    def info(self) -> ModelInfo:
        return self.backend.info

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        return self.review.review(request, lambda r: self.backend.generate(r, cancel, live))

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        return self.backend.count_tokens(messages)

    def close(self) -> None:
        self.backend.close()
        self.review.close()


def _reviewed(
    events: Iterator[Event], review: ReplyReview, prompt_verdict: SafetyVerdict | None
) -> Iterator[Event]:
    token_index, prepared = 0, None
    try:
        for event in events:
            if isinstance(event, PromptPrepared):
                prepared = event
            if isinstance(event, TextDelta):
                token_index = event.token_index
                shown = review.feed(event.text, token_index)
                if shown:
                    yield TextDelta(shown, token_index)
            elif isinstance(event, Finished):
                rest = review.finish()
                if rest:
                    yield TextDelta(rest, token_index)
                if review.flagged is None:
                    yield dataclasses.replace(event, safety=review.last or prompt_verdict)
                    return
            else:
                yield event
            if review.flagged is not None:
                break
    except GuardUnavailableError as exc:
        _close(events)
        yield _refused(exc, "reply", review.released, token_index)
        return
    _close(events)  # a flag: stop generating now
    stats = Stats(completion_tokens=token_index)
    if prepared is not None:
        stats = dataclasses.replace(
            stats,
            prompt_tokens=prepared.prompt_tokens,
            cached_prompt_tokens=prepared.cached_prompt_tokens,
            context_window=prepared.context_window,
            dropped_messages=prepared.dropped_messages,
        )
    yield Finished(FinishReason.CONTENT_FILTER, stats, review.released, safety=review.flagged)


def _stamped(events: Iterator[Event], verdict: SafetyVerdict | None) -> Iterator[Event]:
    for event in events:
        if isinstance(event, Finished) and verdict is not None:
            event = dataclasses.replace(event, safety=verdict)
        yield event


def _close(events: Iterator[Event]) -> None:
    close = getattr(events, "close", None)
    if close is not None:
        close()


def _refused(exc: GuardUnavailableError, stage: str, text: str = "", tokens: int = 0) -> Finished:
    message = f"{exc} (this chat requires the safety review, so it stopped)"
    verdict = _unreviewed(stage, str(exc))
    return Finished(
        FinishReason.ERROR, Stats(completion_tokens=tokens), text, error=message, safety=verdict
    )


def _unreviewed(stage: str, why: str) -> SafetyVerdict:
    return SafetyVerdict("Unreviewed", stage=stage, error=why)


def _last_user_text(request: GenerationRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""
