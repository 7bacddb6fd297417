"""A reply's folded "Sources" section, its [n] marks as links, and a user turn's attachment line.

Owns the HTML added under a reply that was given numbered passages (a clickable "▸ Sources (3)"
header; open, one entry per passage: [n], file, page or heading, the quoted passage), turning
the reply's [1] [2] marks into links to those entries, what a click does (fold or unfold; a
passage or a mark opens `SourceDialog`, the passage highlighted in the text around it), and
the "Attached: notes.md · 2.1 KB" line under a user turn that carried documents. Pure functions
over a `MessageItem` plus one dialog; like `app.views.chat.thinking`. Does not own choosing
passages.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTextBrowser, QVBoxLayout, QWidget

from app.chat.attachments import human_size
from app.chat.sources import Source, sources_from_json
from app.listmodels.messages import MessageItem

SCHEME = "hearth-sources"
TOGGLE_HREF = f"{SCHEME}:toggle"
SOURCE_PREFIX = f"{SCHEME}:show/"  # + n
_MARK = re.compile(r"\[(\d{1,3})\]")


def sources_html(item: MessageItem, *, dark: bool) -> str:
    """The folded section's HTML ("" for a reply without sources)."""
    if item.record.role != "assistant" or not item.sources:
        return ""
    sources = sources_from_json(item.sources)
    muted = "#9a9a9a" if dark else "#6b6b6b"
    link = "#8ab4f8" if dark else "#1a5fb4"
    arrow = "▾ " if item.sources_open else "▸ "
    label = QCoreApplication.translate("Sources", "Sources ({0})").format(len(sources))
    header = (
        f"<p><a href='{TOGGLE_HREF}' style='color:{muted}; text-decoration:none'>"
        f"{html.escape(arrow + label)}</a></p>"
    )
    if not item.sources_open:
        return header
    rows = []
    for s in sources:
        where = html.escape(f"{s.file} · {s.locator}" if s.locator else s.file)
        if s.collection:  # from a collection the chat searches, not an attachment
            where += f" <span style='color:{muted}'>({html.escape(s.collection)})</span>"
        quote = " ".join(s.text.split())
        quote = html.escape(quote[:280] + ("…" if len(quote) > 280 else ""))
        rows.append(
            f"<p style='margin-left:14px'><a href='{SOURCE_PREFIX}{s.number}' "
            f"style='color:{link}; text-decoration:none'>[{s.number}] {where}</a><br>"
            f"<span style='color:{muted}'>“{quote}”</span></p>"
        )
    return header + "".join(rows)


def link_marks(body: str, item: MessageItem, *, dark: bool) -> str:
    """The reply's rendered HTML with each [n] that names a source made a link to it."""
    if not item.sources:
        return body
    numbers = {int(s.get("n", 0)) for s in item.sources}
    color = "#8ab4f8" if dark else "#1a5fb4"

    def link(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if n not in numbers:
            return m.group(0)
        return (
            f"<a href='{SOURCE_PREFIX}{n}' style='color:{color}; text-decoration:none'>"
            f"<sup>[{n}]</sup></a>"
        )

    # Only text between tags: a mark never sits inside an attribute.
    return re.sub(r">([^<]+)<", lambda t: ">" + _MARK.sub(link, t.group(1)) + "<", body)


def attachments_html(item: MessageItem, *, dark: bool) -> str:
    """ "Attached: notes.md · 2.1 KB · 512 tokens" under a user turn that carried documents."""
    if not item.attachments:
        return ""
    muted = "#9a9a9a" if dark else "#6b6b6b"
    parts = []
    for a in item.attachments:
        bits = [str(a.get("name", "")), human_size(int(a.get("size") or 0))]
        if a.get("tokens"):
            bits.append(
                QCoreApplication.translate("Sources", "{0} tokens").format(f"{int(a['tokens']):,}")
            )
        parts.append(" · ".join(bits))
    label = QCoreApplication.translate("Sources", "Attached: {0}").format("   ".join(parts))
    return f"<p style='color:{muted}'>{html.escape(label)}</p>"


def handle_click(href: str, item: MessageItem, parent: QWidget | None) -> bool:
    """Act on a click inside the section; True when ``href`` was one of ours."""
    if href == TOGGLE_HREF:
        item.sources_open = not item.sources_open
        return True
    if href.startswith(SOURCE_PREFIX):
        number = href[len(SOURCE_PREFIX) :]
        for s in sources_from_json(item.sources):
            if str(s.number) == number:
                SourceDialog(s, parent).open()
                break
        return True
    return False


class SourceDialog(QDialog):
    """One passage in context: the text around it, the passage highlighted and scrolled to."""

    def __init__(self, source: Source, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sourceDialog")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        where = f"{source.file} · {source.locator}" if source.locator else source.file
        self.setWindowTitle(f"[{source.number}] {where}")
        self.resize(640, 480)
        heading = f"<b>[{source.number}]</b> {html.escape(where)}"  # data only, nothing to say
        title = QLabel(heading, self)
        title.setObjectName("sourceTitle")
        self.file_note = QLabel(self)
        self.file_note.setObjectName("sourceFileNote")
        self.file_note.setWordWrap(True)
        self.file_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QTextBrowser(self)
        self.text.setObjectName("sourceContext")
        self.text.setOpenLinks(False)
        before = ("…" if source.before else "") + source.before
        after = source.after + ("…" if source.after else "")
        self.text.setPlainText(before + source.text + after)
        self._highlight(len(before), len(source.text))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        self.open_button = buttons.addButton(
            self.tr("Open file"), QDialogButtonBox.ButtonRole.ActionRole
        )
        self.open_button.clicked.connect(lambda: _open_file(source.path))
        self._describe_file(source)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.file_note)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)

    def _describe_file(self, source: Source) -> None:
        """Where a collection's passage lives on disk, and plainly when it is gone."""
        exists = bool(source.path) and Path(source.path).is_file()
        self.open_button.setVisible(exists)
        if not source.path:
            self.file_note.setVisible(False)
            return
        if exists:
            self.file_note.setText(
                self.tr("From the collection {0}: {1}").format(source.collection, source.path)
            )
            return
        self.file_note.setStyleSheet("color: #c01c28")
        self.file_note.setText(
            self.tr(
                "{0} has been deleted or moved since it was indexed; this is the passage as it"
                " was read then."
            ).format(source.path)
        )

    def _highlight(self, start: int, length: int) -> None:
        cursor = QTextCursor(self.text.document())
        cursor.setPosition(start)
        cursor.setPosition(start + length, QTextCursor.MoveMode.KeepAnchor)
        fmt = QTextCharFormat()
        fmt.setBackground(Qt.GlobalColor.yellow)
        fmt.setForeground(Qt.GlobalColor.black)
        cursor.mergeCharFormat(fmt)
        self.highlighted = cursor.selectedText()
        cursor.clearSelection()
        cursor.setPosition(start)
        self.text.setTextCursor(cursor)
        self.text.ensureCursorVisible()


def _open_file(path: str) -> None:
    """The source's file in the program the system uses for it."""
    QDesktopServices.openUrl(QUrl.fromLocalFile(path))
