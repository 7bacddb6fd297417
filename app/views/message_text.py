"""Text shown for a message: its HTML body, the one-line stats summary and the settings tooltip.

Owns the mapping from a `MessageItem` to strings (Markdown via `app.markdown.render` for
finished and streaming replies, escaped plain text for the user's own words) and the
"settings in effect, and where they changed" description. Pure functions; no painting.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.listmodels.messages import MessageItem
from app.markdown.render import RenderLabels, extract_code_blocks, render_markdown
from app.views.thinking import thinking_html

# Marked for lupdate; translated where shown (describe_params).
_PARAM_LABELS = {
    "temperature": QT_TRANSLATE_NOOP("MessageText", "temperature"),
    "top_k": QT_TRANSLATE_NOOP("MessageText", "top-k"),
    "top_p": QT_TRANSLATE_NOOP("MessageText", "top-p"),
    "min_p": QT_TRANSLATE_NOOP("MessageText", "min-p"),
    "repetition_penalty": QT_TRANSLATE_NOOP("MessageText", "repetition penalty"),
    "max_new_tokens": QT_TRANSLATE_NOOP("MessageText", "max tokens"),
    "seed": QT_TRANSLATE_NOOP("MessageText", "seed"),
    "stop": QT_TRANSLATE_NOOP("MessageText", "stop"),
}


def message_html(item: MessageItem, *, dark: bool) -> str:
    """Inert HTML for the body. User text is shown verbatim; replies are rendered Markdown."""
    text = item.content
    if item.role == "assistant":
        body = _markdown(text, dark=dark, streaming=item.streaming) if text else ""
        if item.streaming:
            body += "<span>▍</span>"
        elif not text and item.finish_reason:
            body = (
                f"<i>{html.escape(QCoreApplication.translate('MessageText', '(empty reply)'))}</i>"
            )
        return thinking_html(item, dark=dark) + body
    escaped = html.escape(text).replace("\n", "<br>")
    return f"<p style='white-space: pre-wrap'>{escaped}</p>"


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
    if item.error:
        return QCoreApplication.translate("MessageText", "failed: {0}").format(item.error)
    parts: list[str] = []
    stats = item.stats or {}
    if item.role == "assistant" and stats.get("completion_tokens"):
        parts.append(
            QCoreApplication.translate("MessageText", "{0:.2f} s to first token").format(
                float(stats.get("ttft_s", 0.0))
            )
        )
        parts.append(
            QCoreApplication.translate("MessageText", "{0:.1f} tok/s").format(
                float(stats.get("decode_tokens_per_s", 0.0))
            )
        )
        parts.append(
            QCoreApplication.translate("MessageText", "{0} tokens").format(
                int(stats["completion_tokens"])
            )
        )
    reason = {
        "length": QCoreApplication.translate("MessageText", "stopped at the token limit"),
        "cancelled": QCoreApplication.translate("MessageText", "stopped"),
        "partial": QCoreApplication.translate("MessageText", "cut off when Hearth closed"),
    }.get(item.finish_reason or "")
    if reason:
        parts.append(reason)
    if item.param_changes:
        parts.append(QCoreApplication.translate("MessageText", "settings changed while writing"))
    return " · ".join(parts)


def describe_params(params: dict[str, Any] | None) -> str:
    if not params:
        return QCoreApplication.translate("MessageText", "(not recorded)")
    shown = []
    for key, label in _PARAM_LABELS.items():
        if key in params and params[key] not in (None, [], ()):
            shown.append(f"{QCoreApplication.translate('MessageText', label)} {params[key]}")
    return ", ".join(shown)


def settings_tooltip(item: MessageItem) -> str:
    """Plain text: the sampling settings at the start and every live change with its token."""
    lines = [
        QCoreApplication.translate("MessageText", "Settings: {0}").format(
            describe_params(item.params)
        )
    ]
    previous = item.params or {}
    for change in item.param_changes:
        params = dict(change.get("params") or {})
        diff = {k: v for k, v in params.items() if previous.get(k) != v}
        lines.append(
            QCoreApplication.translate("MessageText", "From token {0}: {1}").format(
                change.get("token_index"), describe_params(diff)
            )
        )
        previous = params
    if item.model:
        lines.append(QCoreApplication.translate("MessageText", "Model: {0}").format(item.model))
    return "\n".join(lines)


def details_text(item: MessageItem) -> str:
    """Everything recorded about a reply, for the Details dialog."""
    lines = [settings_tooltip(item), ""]
    for key, value in (item.stats or {}).items():
        lines.append(f"{key}: {value}")
    if item.finish_reason:
        lines.append(
            QCoreApplication.translate("MessageText", "Finish reason: {0}").format(
                item.finish_reason
            )
        )
    if item.error:
        lines.append(QCoreApplication.translate("MessageText", "Error: {0}").format(item.error))
    return "\n".join(lines)
