"""Text shown for a message: its HTML body, the one-line stats summary and the settings tooltip.

Owns the mapping from a `MessageItem` to strings (Markdown via `app.markdown.render` for
finished and streaming replies, escaped plain text for the user's own words), the "settings in
effect, and where they changed" description (labels from `app.views.chat.param_labels`), and the
Details text: translated labels, rounded figures. Stored stats and params come from the
database or an imported file, so a value of the wrong type is shown as it is, never raised on.
Pure functions; no painting.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.listmodels.messages import MessageItem
from app.markdown.render import RenderLabels, extract_code_blocks, render_markdown
from app.views.chat.message_images import images_html, images_of
from app.views.chat.param_labels import param_label
from app.views.chat.thinking import thinking_html
from app.views.documents.sources_fold import attachments_html, link_marks, sources_html
from app.views.tools.tools_fold import tools_html
from engine.types import PARAMS

# `engine.types.Stats` fields: (label marked for lupdate, format of the value). Unknown keys
# (a newer version's) are shown by name.
_STAT_LABELS = {
    "prompt_tokens": (QT_TRANSLATE_NOOP("MessageText", "Prompt tokens"), "{0:d}"),
    "cached_prompt_tokens": (QT_TRANSLATE_NOOP("MessageText", "Cached prompt tokens"), "{0:d}"),
    "completion_tokens": (QT_TRANSLATE_NOOP("MessageText", "Reply tokens"), "{0:d}"),
    "ttft_s": (QT_TRANSLATE_NOOP("MessageText", "Time to first token"), "{0:.2f} s"),
    "prefill_tokens_per_s": (QT_TRANSLATE_NOOP("MessageText", "Prompt speed"), "{0:.1f} tok/s"),
    "decode_tokens_per_s": (QT_TRANSLATE_NOOP("MessageText", "Reply speed"), "{0:.1f} tok/s"),
    "total_s": (QT_TRANSLATE_NOOP("MessageText", "Total time"), "{0:.2f} s"),
    "context_window": (QT_TRANSLATE_NOOP("MessageText", "Context window"), "{0:d}"),
    "dropped_messages": (QT_TRANSLATE_NOOP("MessageText", "Messages left out"), "{0:d}"),
}

_FINISH_REASONS = {  # `engine.types.FinishReason` values
    "stop": QT_TRANSLATE_NOOP("MessageText", "finished"),
    "length": QT_TRANSLATE_NOOP("MessageText", "token limit reached"),
    "cancelled": QT_TRANSLATE_NOOP("MessageText", "stopped by you"),
    "error": QT_TRANSLATE_NOOP("MessageText", "failed"),
    "content_filter": QT_TRANSLATE_NOOP("MessageText", "stopped by the safety review"),
}


def message_html(item: MessageItem, *, dark: bool) -> str:
    """Inert HTML for the body. User text is shown verbatim; replies are rendered Markdown."""
    text = item.record.content
    if item.record.role == "assistant":
        body = _markdown(text, dark=dark, streaming=item.streaming) if text else ""
        if item.streaming:
            body += "<span>▍</span>"
        elif not text and item.record.finish_reason == "content_filter":
            note = QCoreApplication.translate("MessageText", "(no reply: {0})").format(
                safety_note(item) or _FINISH_REASONS["content_filter"]
            )
            body = f"<i>{html.escape(note)}</i>"
        elif not text and item.record.finish_reason:
            body = (
                f"<i>{html.escape(QCoreApplication.translate('MessageText', '(empty reply)'))}</i>"
            )
        if text and not item.streaming and item.record.finish_reason == "content_filter":
            note = QCoreApplication.translate("MessageText", "({0}; the rest was not shown)")
            body += f"<p><i>{html.escape(note.format(safety_note(item)))}</i></p>"
        body = link_marks(body, item, dark=dark) + tools_html(item, dark=dark)
        body += sources_html(item, dark=dark)
        return thinking_html(item, dark=dark) + body
    escaped = html.escape(text).replace("\n", "<br>")
    words = f"<p style='white-space: pre-wrap'>{escaped}</p>" if text or not images_of(item) else ""
    return images_html(item) + words + attachments_html(item, dark=dark)


def _markdown(text: str, *, dark: bool, streaming: bool) -> str:
    # Spelled out: lupdate reads a call named tr() as tr(source, disambiguation).
    labels = RenderLabels(
        copy=QCoreApplication.translate("MessageText", "Copy"),
        image=QCoreApplication.translate("MessageText", "image"),
        line_shortened=QCoreApplication.translate(
            "MessageText", "… (line shortened; copy shows all)"
        ),
        text_shortened=QCoreApplication.translate(
            "MessageText", "… (message shortened for display; copy shows all)"
        ),
        rows_hidden=QCoreApplication.translate("MessageText", "… ({0} more rows; copy shows all)"),
        lines_hidden=QCoreApplication.translate(
            "MessageText", "… ({0} more lines; copy shows all)"
        ),
    )
    # The chat list cannot scroll sideways, so long code lines wrap instead of being cut off.
    return render_markdown(text, dark=dark, labels=labels, streaming=streaming, wrap_code=True)


def code_blocks(text: str) -> list[str]:
    return extract_code_blocks(text)


def message_summary(item: MessageItem) -> str:
    """One line next to the role: stats, or the state of an unfinished reply."""
    if item.streaming:
        return QCoreApplication.translate("MessageText", "writing…")
    if item.record.error:
        return QCoreApplication.translate("MessageText", "failed: {0}").format(item.record.error)
    parts: list[str] = []
    stats = item.record.stats if isinstance(item.record.stats, dict) else {}
    tokens, ttft, speed = (
        _number(stats.get(k)) for k in ("completion_tokens", "ttft_s", "decode_tokens_per_s")
    )
    if item.record.role == "assistant" and tokens:
        if ttft is not None:
            text = QCoreApplication.translate("MessageText", "{0:.2f} s to first token")
            parts.append(text.format(ttft))
        if speed is not None:
            parts.append(QCoreApplication.translate("MessageText", "{0:.1f} tok/s").format(speed))
        parts.append(QCoreApplication.translate("MessageText", "{0} tokens").format(int(tokens)))
    reason = {
        "length": QCoreApplication.translate("MessageText", "stopped at the token limit"),
        "cancelled": QCoreApplication.translate("MessageText", "stopped"),
        "partial": QCoreApplication.translate("MessageText", "cut off when Hearth closed"),
    }.get(item.record.finish_reason or "")
    if reason:
        parts.append(reason)
    safety = safety_note(item)
    if safety:
        parts.append(safety)
    if item.record.param_changes:
        parts.append(QCoreApplication.translate("MessageText", "settings changed while writing"))
    return " · ".join(parts)


def safety_note(item: MessageItem) -> str:
    """What the safety review did to a reply, for its summary line: stopped and why, or not
    reviewed; "" when it passed or did not run."""
    stats = item.record.stats if isinstance(item.record.stats, dict) else {}
    verdict = stats.get("safety")
    if not isinstance(verdict, dict):
        return ""
    named = ", ".join(str(c) for c in verdict.get("categories") or []) or str(verdict.get("safety"))
    if item.record.finish_reason == "content_filter":
        if verdict.get("stage") == "prompt":
            text = QCoreApplication.translate(
                "MessageText", "question stopped by the safety review: {0}"
            )
        else:
            text = QCoreApplication.translate("MessageText", "stopped by the safety review: {0}")
        return text.format(named)
    if verdict.get("safety") == "Unreviewed":
        return QCoreApplication.translate("MessageText", "not reviewed: the guard was unavailable")
    return ""


def describe_params(params: Mapping[str, Any] | None) -> str:
    """ "Temperature 0.7, Top-k 40, …" in the `engine.params` order, translated and rounded."""
    if not params or not isinstance(params, Mapping):
        return QCoreApplication.translate("MessageText", "(not recorded)")
    shown = []
    for param in PARAMS:
        value = params.get(param.name)
        if value in (None, [], ()):
            continue
        if param.kind == "strings" and isinstance(value, list | tuple):
            value = ", ".join(repr(s) for s in value)
        shown.append(f"{param_label(param.name)} {_figure(value)}")
    return ", ".join(shown)


def _number(value: object) -> float | None:
    """``value`` as a finite number, or None (missing, text, a bool from a bad import)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _figure(value: object) -> str:
    """Numbers rounded to 4 significant digits (0.1452 not 0.14521203699996477); others as is."""
    number = _number(value)
    return f"{number:.4g}" if number is not None else str(value)


def _stat_line(key: str, value: object) -> str:
    label, fmt = _STAT_LABELS.get(key, (key, ""))
    number = _number(value)
    if not fmt or number is None:
        shown = _figure(value)
    else:
        shown = fmt.format(round(number) if fmt == "{0:d}" else number)
    label = QCoreApplication.translate("MessageText", str(label))
    return QCoreApplication.translate("MessageText", "{0}: {1}").format(label, shown)


def settings_tooltip(item: MessageItem) -> str:
    """Plain text: the sampling settings at the start and every live change with its token."""
    lines = [
        QCoreApplication.translate("MessageText", "Settings: {0}").format(
            describe_params(item.record.params)
        )
    ]
    previous = item.record.params if isinstance(item.record.params, dict) else {}
    changes = item.record.param_changes
    for change in changes if isinstance(changes, tuple | list) else ():
        if not isinstance(change, Mapping):
            continue
        params = dict(change["params"]) if isinstance(change.get("params"), dict) else {}
        diff = {k: v for k, v in params.items() if previous.get(k) != v}
        lines.append(
            QCoreApplication.translate("MessageText", "From token {0}: {1}").format(
                change.get("token_index"), describe_params(diff)
            )
        )
        previous = params
    if item.record.model:
        lines.append(
            QCoreApplication.translate("MessageText", "Model: {0}").format(item.record.model)
        )
    return "\n".join(lines)


def details_text(item: MessageItem) -> str:
    """Everything recorded about a reply, for the Details dialog."""
    lines = [settings_tooltip(item), ""]
    stats = item.record.stats if isinstance(item.record.stats, dict) else {}
    lines += [_stat_line(str(key), value) for key, value in stats.items()]
    if item.record.finish_reason:
        reason = _FINISH_REASONS.get(item.record.finish_reason, item.record.finish_reason)
        lines.append(
            QCoreApplication.translate("MessageText", "Finish reason: {0}").format(
                QCoreApplication.translate("MessageText", str(reason))
            )
        )
    if item.record.error:
        lines.append(
            QCoreApplication.translate("MessageText", "Error: {0}").format(item.record.error)
        )
    return "\n".join(lines)
