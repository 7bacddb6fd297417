"""The folded "Thinking" section above a reasoning model's answer.

Owns the section's HTML (a clickable header, "Thinking… 5 s" while the model thinks, "Thought for
12 s" after, and the thinking itself as muted plain text when the section is open), whether it
is open, and what a click on its header does. Open by default while the model is still
thinking (so it streams live), folded once the answer starts; a click overrides that for the
message (`MessageItem.thinking_open`). Pure functions over a `MessageItem`; no painting.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QCoreApplication

from app.listmodels.messages import MessageItem

SCHEME = "hearth-thinking"  # the header's link: ``hearth-thinking:toggle``
TOGGLE_HREF = f"{SCHEME}:toggle"


def still_thinking(item: MessageItem) -> bool:
    return item.streaming and bool(item.record.reasoning) and not item.record.content.strip()


def is_open(item: MessageItem) -> bool:
    if item.thinking_open is not None:
        return item.thinking_open
    return still_thinking(item)


def toggle(item: MessageItem) -> None:
    """Open or fold the section (the caller re-renders the row)."""
    item.thinking_open = not is_open(item)


def format_duration(seconds: float | None) -> str:
    """ "12 s", "2 min 5 s" (translated); "" when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    whole = round(seconds)
    if whole < 60:
        return QCoreApplication.translate("Thinking", "{0} s").format(whole)
    return QCoreApplication.translate("Thinking", "{0} min {1} s").format(whole // 60, whole % 60)


def header_text(item: MessageItem) -> str:
    duration = format_duration(item.record.reasoning_seconds)
    if still_thinking(item):
        label = QCoreApplication.translate("Thinking", "Thinking… {0}").format(duration).strip()
    elif duration:
        label = QCoreApplication.translate("Thinking", "Thought for {0}").format(duration)
    else:
        label = QCoreApplication.translate("Thinking", "Thinking")
    return ("▾ " if is_open(item) else "▸ ") + label


def thinking_html(item: MessageItem, *, dark: bool) -> str:
    """The section's HTML, or "" for a message without thinking."""
    if item.record.role != "assistant" or not item.record.reasoning.strip():
        return ""
    muted = "#9a9a9a" if dark else "#6b6b6b"
    header = (
        f"<p><a href='{TOGGLE_HREF}' style='color:{muted}; text-decoration:none'>"
        f"{html.escape(header_text(item))}</a></p>"
    )
    if not is_open(item):
        return header
    text = html.escape(item.record.reasoning.strip("\n")).replace("\n", "<br>")
    return (
        f"{header}<blockquote style='color:{muted}; margin-left:14px'>"
        f"<p style='white-space: pre-wrap'>{text}</p></blockquote>"
    )
