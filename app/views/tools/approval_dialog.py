"""The approval step: a tool call's name, server and arguments, and the user's answer.

Every call the model makes is shown here before it runs (unless the user chose "always" for
that tool): Allow once, Always allow this tool, or Deny. Closing the dialog denies. The dialog
is not modal, so Stop stays reachable (Stop cancels the pending ask and closes the dialog).
`DialogAsker` is the ``ask`` callback `app.chat.tool_rounds.ToolRounds` awaits.
"""

from __future__ import annotations

import asyncio
import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.mcp.approval import Decision
from app.mcp.hub import ToolInfo
from engine.types import ToolCall


class ApprovalDialog(QDialog):
    def __init__(self, tool: ToolInfo, call: ToolCall, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Run a tool?"))
        self.decision = Decision.DENY
        layout = QVBoxLayout(self)
        intro = QLabel(
            self.tr("The model wants to run {0} from the MCP server {1}.").format(
                tool.name, tool.server
            )
        )
        intro.setTextFormat(Qt.TextFormat.PlainText)  # names come from the server
        intro.setWordWrap(True)
        layout.addWidget(intro)
        if tool.description:
            about = QLabel(tool.description)
            about.setTextFormat(Qt.TextFormat.PlainText)
            about.setWordWrap(True)
            layout.addWidget(about)
        layout.addWidget(QLabel(self.tr("Arguments:")))
        self.arguments = QPlainTextEdit(_pretty(call.arguments))
        self.arguments.setReadOnly(True)
        layout.addWidget(self.arguments)
        buttons = QDialogButtonBox(self)
        self.once = QPushButton(self.tr("Allow once"))
        self.always = QPushButton(self.tr("Always allow {0}").format(tool.name))
        self.deny = QPushButton(self.tr("Deny"))
        for button, decision in (
            (self.once, Decision.ONCE),
            (self.always, Decision.ALWAYS),
            (self.deny, Decision.DENY),
        ):
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
            button.clicked.connect(lambda _=False, d=decision: self._answer(d))
        layout.addWidget(buttons)
        self.deny.setDefault(True)  # Enter never runs a tool by accident

    def _answer(self, decision: Decision) -> None:
        self.decision = decision
        self.accept()


class DialogAsker:
    """``await asker(tool, call)`` shows an `ApprovalDialog` and returns the answer."""

    def __init__(self, parent: QWidget | None) -> None:
        self.parent = parent
        self.dialog: ApprovalDialog | None = None

    async def __call__(self, tool: ToolInfo, call: ToolCall) -> Decision:
        dialog = ApprovalDialog(tool, call, self.parent)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_finished(_result: int) -> None:
            if not done.done():
                done.set_result(None)

        dialog.finished.connect(on_finished)
        self.dialog = dialog
        dialog.show()
        try:
            await done
            return dialog.decision
        finally:  # answered, or Stop cancelled the wait: the dialog goes either way
            self.dialog = None
            dialog.finished.disconnect()
            dialog.close()
            dialog.deleteLater()


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments
