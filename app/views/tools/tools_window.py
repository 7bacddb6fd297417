"""The Tools window: MCP servers as JSON, their tools with switches, and each server's status.

Left: the ``{"mcpServers": {...}}`` JSON other MCP clients use (a stdio ``command`` with
``args``/``env``, or a streamable HTTP ``url``); env values show as "<in keyring>" once saved.
Save checks it (a one-line error names the server and field; nothing typed is lost), moves env
values into the keyring, and restarts changed servers. Right: every server's tools with two
switches, "All chats" (the default) and "This chat", plus each server's status or last error.
"List tools" starts the servers (they also start on demand when a chat offers their tools).
Does not run servers (`app.mcp.hub`) or own the policy (`app.mcp.approval`).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.mcp.approval import ApprovalPolicy
from app.mcp.config import ConfigError, SecretStore, dump_servers, parse_servers, store_secrets
from app.mcp.hub import McpHub, ToolInfo

EXAMPLE = (
    '{\n  "mcpServers": {\n    "files": {\n      "command": "npx",\n'
    '      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/folder"]\n'
    "    }\n  }\n}\n"
)
ALL_CHATS, THIS_CHAT = 1, 2  # switch columns


class ToolsWindow(QDialog):
    def __init__(
        self,
        hub: McpHub,
        policy: ApprovalPolicy,
        secrets: SecretStore,
        chat_id: Callable[[], str | None],
        save: Callable[[], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.hub, self.policy, self.secrets = hub, policy, secrets
        self._chat_id, self._save = chat_id, save
        self.setWindowTitle(self.tr("Tools (MCP)"))
        self.resize(900, 520)
        self.editor = QPlainTextEdit(dump_servers(hub.servers) if hub.servers else EXAMPLE)
        self.error = QLabel()
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setWordWrap(True)
        save_button = QPushButton(self.tr("Save servers"))
        save_button.clicked.connect(self.on_save_clicked)
        list_button = QPushButton(self.tr("List tools"))
        list_button.clicked.connect(self.on_list_clicked)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(
            [self.tr("Server / tool"), self.tr("All chats"), self.tr("This chat")]
        )
        self.tree.itemChanged.connect(self.on_tree_item_changed)
        left = QVBoxLayout()
        left.addWidget(QLabel(self.tr("Servers (the mcpServers JSON other MCP clients use):")))
        left.addWidget(self.editor)
        left.addWidget(self.error)
        left.addWidget(save_button)
        right = QVBoxLayout()
        note = QLabel(
            self.tr(
                "A tool can do whatever its server can: read or change files, run commands, "
                "reach the network. Hearth asks before every call."
            )
        )
        note.setWordWrap(True)
        right.addWidget(note)
        right.addWidget(self.tree)
        right.addWidget(list_button)
        layout = QHBoxLayout(self)
        layout.addLayout(left, 1)
        layout.addLayout(right, 1)
        self._tools: list[ToolInfo] = []
        self._fill()

    # -- servers ----------------------------------------------------------------------------
    def save_servers(self) -> bool:
        """Check and apply the JSON; True when saved. A bad JSON stays in the editor."""
        try:
            servers = store_secrets(parse_servers(self.editor.toPlainText()), self.secrets)
        except ConfigError as exc:
            self.error.setText(str(exc))
            return False
        self.hub.configure(servers)
        self.editor.setPlainText(dump_servers(servers))  # typed secrets now show the mark
        self.error.setText(self.tr("Saved."))
        self._save()
        self._fill()
        return True

    def on_save_clicked(self) -> None:
        self.save_servers()

    @asyncSlot()
    async def on_list_clicked(self) -> None:
        await self.list_tools()

    async def list_tools(self) -> None:
        # A server that fails is skipped; its error shows as its status.
        self._tools = await self.hub.all_tools()
        self._fill()

    # -- switches ---------------------------------------------------------------------------
    def _fill(self) -> None:
        self.tree.blockSignals(True)
        self.tree.clear()
        chat = self._chat_id()
        for server in self.hub.servers:
            status = self.hub.errors.get(server.name) or (
                self.tr("running") if self.hub.running(server.name) else self.tr("not started")
            )
            top = QTreeWidgetItem([f"{server.name} ({status})"])
            top.setToolTip(0, top.text(0))
            self.tree.addTopLevelItem(top)
            top.setFirstColumnSpanned(True)  # a server's row is its name and status only
            for tool in (t for t in self._tools if t.server == server.name):
                row = QTreeWidgetItem([tool.name])
                row.setToolTip(0, tool.description)
                row.setData(0, Qt.ItemDataRole.UserRole, tool.key)
                on_default = self.policy.enabled.get(tool.key, False)
                row.setCheckState(ALL_CHATS, _check(on_default))
                if chat is not None:
                    row.setCheckState(THIS_CHAT, _check(self.policy.is_enabled(chat, tool.key)))
                top.addChild(row)
            top.setExpanded(True)
        self.tree.blockSignals(False)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Tool names whole: the first column was 100 px ("get_w…") beside two check columns
        that stretched. Each column is as wide as what it holds; a narrow window scrolls."""
        header = self.tree.header()
        header.setStretchLastSection(False)
        for column in range(self.tree.columnCount()):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)

    def on_tree_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        key = item.data(0, Qt.ItemDataRole.UserRole)
        if not key or column not in (ALL_CHATS, THIS_CHAT):
            return
        on = item.checkState(column) == Qt.CheckState.Checked
        chat = self._chat_id()
        self.policy.set_enabled(None if column == ALL_CHATS else chat, key, on)
        self._save()
        if chat is not None:  # the row only: rebuilding the tree here would delete ``item``
            self.tree.blockSignals(True)
            item.setCheckState(THIS_CHAT, _check(self.policy.is_enabled(chat, key)))
            self.tree.blockSignals(False)


def _check(on: bool) -> Qt.CheckState:
    return Qt.CheckState.Checked if on else Qt.CheckState.Unchecked
