"""A guard model asked for a verdict: any `Backend` answering in Qwen3Guard-Gen's format.

Owns `Guard`: it sends the user's turn (a prompt check), or the user's turn and the reply so far
(a reply check), to a backend as chat messages, greedily, and parses the answer
(`engine.safety.qwen3guard.parse_verdict`). The backend is a local `engine.engine.Engine` running
a guard file beside the chat model (the same engine, a second model), or a
`engine.remote.backend.RemoteEngine` on an OpenAI-compatible endpoint serving one; the
composition root (CLI, server, app bridge) builds it. A local guard whose file carries no guard
chat template (a stand-in model in tests, a bare conversion) is given `GUARD_TEMPLATE`.

Every failure (endpoint down, a load error, an answer without a ``Safety:`` line, a timeout)
becomes one `GuardUnavailableError` with a user-facing reason. Does not own what a verdict or a
failure leads to (`engine.safety.review`).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from engine.errors import EngineError, GuardUnavailableError
from engine.safety.qwen3guard import GUARD_TEMPLATE, is_guard_template, parse_verdict
from engine.types import (
    Backend,
    Finished,
    FinishReason,
    GenerationRequest,
    Message,
    SafetyVerdict,
    SamplingParams,
    TextDelta,
)

ANSWER_TOKENS = 32  # "Safety: Unsafe\nCategories: Violent, PII\nRefusal: No" is ~15 tokens
# A reply check sends the reply's last this many characters (~4-6k tokens): the guard's own
# context (8,192 tokens by default) must hold its instructions, the question and the reply.
MAX_REPLY_CHARS = 16_000
# Enough to act on: "Safety: Safe" (no category to name; the Refusal line is not used), or a
# finished Categories line. Stopping there saves most of a safe check's decode steps.
_DECIDED = re.compile(r"Safety:\s*Safe\s*\n|Categories:[^\n]*\n", re.I)


class Guard:
    """Verdicts from ``backend`` (see the module docstring); ``name`` is shown to people."""

    def __init__(self, backend: Backend, name: str, answer_tokens: int = ANSWER_TOKENS) -> None:
        self.backend = backend
        self.name = name
        self._params = SamplingParams(temperature=0.0, max_new_tokens=answer_tokens, seed=0)
        tokenizer: Any = getattr(backend, "tokenizer", None)
        if tokenizer is not None and not is_guard_template(
            getattr(tokenizer, "chat_template", None)
        ):
            tokenizer.chat_template = GUARD_TEMPLATE

    def check(self, user: str, reply: str | None = None) -> SafetyVerdict:
        """The guard's verdict on ``user`` (and ``reply``). Raises GuardUnavailableError."""
        messages = [Message("user", user[-MAX_REPLY_CHARS:])]
        if reply is not None:
            if len(reply) > MAX_REPLY_CHARS:  # a very long reply: judged by its latest part
                reply = "…" + reply[-MAX_REPLY_CHARS:]
            messages.append(Message("assistant", reply))
        stage = "prompt" if reply is None else "reply"
        # One conversation per reply: its reply checks share their prefix in the guard's cache.
        request = GenerationRequest(
            messages=tuple(messages),
            params=self._params,
            conversation_id="hearth-guard",
            thinking=False,
        )
        answer = self._answer(request)
        verdict = parse_verdict(answer, stage=stage)
        if verdict is None:
            raise GuardUnavailableError(
                f"the guard {self.name} gave no verdict (it answered {answer[:60]!r}); "
                "is it a Qwen3Guard-Gen model?"
            )
        return verdict

    def _answer(self, request: GenerationRequest) -> str:
        text = ""
        events = self.backend.generate(request, threading.Event())
        try:
            for event in events:
                if isinstance(event, TextDelta):
                    text += event.text
                    if _DECIDED.search(text):
                        break
                elif isinstance(event, Finished) and event.reason == FinishReason.ERROR:
                    raise GuardUnavailableError(f"the guard {self.name} failed: {event.error}")
        except GuardUnavailableError:
            raise
        except EngineError as exc:
            raise GuardUnavailableError(f"the guard {self.name} is not available: {exc}") from exc
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # an early stop ends the guard's generation now
        return text

    def close(self) -> None:
        self.backend.close()


class UnavailableGuard(Guard):
    """A guard that could not be opened (its file failed to load): every check raises
    GuardUnavailableError with ``reason``, so the review treats it as a guard that is down."""

    def __init__(self, name: str, reason: str) -> None:  # no backend: nothing was opened
        self.name = name
        self.reason = reason

    def check(self, user: str, reply: str | None = None) -> SafetyVerdict:
        raise GuardUnavailableError(f"the guard {self.name} could not be opened: {self.reason}")

    def close(self) -> None:
        pass
