"""The folded "Tools" section under a reply that called tools.

Owns the section's HTML: a clickable header ("▸ Tools: add, search"), and when open each call's
name, status, arguments and result. Tool output is untrusted: every value is escaped and shown
as plain text (``white-space: pre-wrap``), never as Markdown or HTML, and it carries no links.
Folded by default; a click toggles it for the message (`MessageItem.tools_open`). Pure functions
over a `MessageItem`; no painting.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.listmodels.messages import MessageItem

SCHEME = "hearth-tools"
TOGGLE_HREF = f"{SCHEME}:toggle"
STATUS = {
    "ok": QT_TRANSLATE_NOOP("ToolsFold", "ran"),
    "error": QT_TRANSLATE_NOOP("ToolsFold", "failed"),
    "denied": QT_TRANSLATE_NOOP("ToolsFold", "denied by you"),
    "cancelled": QT_TRANSLATE_NOOP("ToolsFold", "stopped"),
    "pending": QT_TRANSLATE_NOOP("ToolsFold", "waiting for approval"),
}


def header_text(item: MessageItem) -> str:
    names = ", ".join(dict.fromkeys(str(c.get("name", "")) for c in item.tool_calls))
    label = QCoreApplication.translate("ToolsFold", "Tools: {0}").format(names)
    return ("▾ " if item.tools_open else "▸ ") + label


def tools_html(item: MessageItem, *, dark: bool) -> str:
    """The section's HTML, or "" for a message without tool calls."""
    if item.record.role != "assistant" or not item.tool_calls:
        return ""
    muted = "#9a9a9a" if dark else "#6b6b6b"
    header = (
        f"<p><a href='{TOGGLE_HREF}' style='color:{muted}; text-decoration:none'>"
        f"{html.escape(header_text(item))}</a></p>"
    )
    if not item.tools_open:
        return header
    parts = [header]
    for call in item.tool_calls:
        raw = str(call.get("status", ""))
        status = QCoreApplication.translate("ToolsFold", str(STATUS[raw])) if raw in STATUS else raw
        parts.append(
            f"<blockquote style='color:{muted}; margin-left:14px'>"
            f"<p><b>{html.escape(str(call.get('name', '')))}</b> ({html.escape(status)})</p>"
            f"{_plain(str(call.get('arguments', '')))}{_plain(str(call.get('result', '')))}"
            "</blockquote>"
        )
    return "".join(parts)


def _plain(text: str) -> str:
    escaped = html.escape(text.strip("\n"))
    return f"<p style='white-space: pre-wrap; font-family: monospace'>{escaped}</p>"


def handle_click(href: str, item: MessageItem) -> bool:
    """Toggle the section on its header's link; True when ``href`` was ours."""
    if href != TOGGLE_HREF:
        return False
    item.tools_open = not item.tools_open
    return True
