"""`ReplyRun`: one streaming reply on the GUI thread, from its first event to its last.

Owns the reply's cancel flag, coalescing text deltas (the message row is touched at most every
~33 ms, however fast tokens arrive), throttled saves of the growing text, the record of live
parameter changes, and folding the final event (or failure) into the `MessageItem`. Does not
own the conversation, the store, the state machine (`ChatSession`) or the parameters (they
flow through the session's `LiveParams`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.bridge import Failed
from app.chat.reasoning import ReplyText
from app.chat.repetition import RepetitionWatch
from app.listmodels.messages import MessageItem
from engine.types import Finished, ParamsApplied, PromptPrepared, ReasoningDelta, TextDelta

FLUSH_MS = 33  # ~30 Hz repaint of the streaming row
SAVE_EVERY_S = 0.5  # a growing reply is written to SQLite at most twice a second


class ReplyRun(QObject):
    sig_context_changed = Signal(int, int, int)  # used, total, cached tokens
    sig_context_restored = Signal(int)  # of the cached tokens, those read from a saved cache
    sig_notice = Signal(str)

    def __init__(
        self,
        reply: MessageItem,
        touch: Callable[[MessageItem], None],
        save: Callable[[MessageItem], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.reply = reply
        self.cancel = threading.Event()
        self.changes: list[dict[str, Any]] = []
        self.finished: Finished | None = None
        self.failure: BaseException | None = None
        self._touch, self._save = touch, save
        self._pending = ""
        self._pending_thinking = False  # _pending is thinking sent apart (ReasoningDelta)
        self.text = ReplyText(reply)  # splits <think>…</think> off the answer, times it
        self.repetition = RepetitionWatch()  # a reply stuck on one unit is stopped
        self._saved_at = time.monotonic()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        reply.streaming = True
        reply.update(finish_reason=None, error=None)
        touch(reply)

    def on_event(self, event: object) -> None:
        if isinstance(event, TextDelta | ReasoningDelta):
            # Thinking sent apart (a remote endpoint's, gpt-oss's) is coalesced like text;
            # a switch between the two flushes first, so their order is kept.
            thinking = isinstance(event, ReasoningDelta)
            if self._pending and thinking != self._pending_thinking:
                self.flush()
            self._pending_thinking = thinking
            self._pending += event.text
            self._stop_if_repeating(event.text)
            if not self._timer.isActive():
                self._timer.start()
            if time.monotonic() - self._saved_at > SAVE_EVERY_S:
                self.flush()
                self._saved_at = time.monotonic()
                self._save(self.reply)
        elif isinstance(event, PromptPrepared):
            self.text.begin(opens_thinking=event.opens_thinking)
            self.sig_context_restored.emit(event.restored_prompt_tokens)  # first: the label
            self.sig_context_changed.emit(
                event.prompt_tokens, event.context_window, event.cached_prompt_tokens
            )
            if event.dropped_messages:
                self.sig_notice.emit(
                    self.tr(
                        "{0} oldest messages did not fit the context and were left out."
                    ).format(event.dropped_messages)
                )
        elif isinstance(event, ParamsApplied):
            self.changes.append(
                {"token_index": event.token_index, "params": event.params.to_dict()}
            )
        elif isinstance(event, Finished):
            self.finished = event
        elif isinstance(event, Failed):
            self.failure = event.error

    def _stop_if_repeating(self, text: str) -> None:
        unit = self.repetition.add(text)
        if unit is None or self.cancel.is_set():
            return
        self.cancel.set()  # ends as "stopped", with Continue, like the Stop button
        shown = unit.strip()
        self.sig_notice.emit(
            self.tr(
                "Stopped: the reply kept repeating “{0}”. A larger model answers better."
            ).format(shown)
        )

    def flush(self) -> None:
        """Move coalesced text into the message (one row update)."""
        self._timer.stop()
        if self._pending:
            if self._pending_thinking:
                self.text.add_reasoning(self._pending)
            else:
                self.text.add(self._pending)
            self._pending = ""
            self._touch(self.reply)

    def conclude(self) -> str:
        """Fold the outcome into the message; return the store status for it."""
        self.flush()
        self.text.finish()
        reply, finished = self.reply, self.finished
        reply.streaming = False
        reply.update(param_changes=tuple(self.changes))
        if finished is not None:
            stats = finished.stats.to_dict()
            if finished.safety is not None:  # the review's verdict rides with the stats
                stats["safety"] = finished.safety.to_dict()
            reply.update(finish_reason=finished.reason.value, stats=stats, error=finished.error)
            s = finished.stats
            self.sig_context_changed.emit(
                s.prompt_tokens + s.completion_tokens, s.context_window, s.cached_prompt_tokens
            )
        if self.failure is not None:
            error = str(self.failure) or type(self.failure).__name__
            reply.update(finish_reason="error", error=error)
        self._touch(reply)
        return {
            "stop": "complete",
            "length": "complete",
            "tool_calls": "complete",  # the last round ended in calls (tools' text is saved)
            "content_filter": "complete",  # stopped by the safety review: what was shown stays
            "cancelled": "cancelled",
        }.get(reply.record.finish_reason or "", "error")
