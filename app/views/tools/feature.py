"""`ToolsFeature`: MCP tools composed into the running app (built by the composition root).

Builds the `McpHub` from ``mcp.json`` in the data folder (env secrets read back from the OS
keyring when a server starts), gives the chat session its `ToolRounds` with the approval
dialog as the ``ask`` callback, opens the Tools window, and stops every server on quit.
A broken ``mcp.json`` starts no server and is shown in the Tools window; the chat still works.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWidget

from app.chat.session import ChatSession
from app.chat.tool_rounds import ToolRounds
from app.mcp.config import ConfigError, resolve_secrets
from app.mcp.hub import McpHub
from app.mcp.storage import ToolSettings
from app.system.paths import data_dir
from app.system.secrets import KeyStore
from app.views.tools.approval_dialog import DialogAsker
from app.views.tools.tools_window import ToolsWindow


class ToolsFeature:
    def __init__(self, window: QWidget, session: ChatSession, folder: Path) -> None:
        self.window, self.session = window, session
        self.settings = ToolSettings(folder)
        self.secrets = KeyStore()
        self.hub = McpHub(resolve=lambda s: resolve_secrets(s, self.secrets))
        self.load_error = ""
        try:
            self.hub.configure(self.settings.load_servers())
        except ConfigError as exc:
            self.load_error = f"{self.settings.folder / 'mcp.json'}: {exc}"
        self.asker = DialogAsker(window)
        session.tool_rounds = ToolRounds(self.hub, self.settings.load_policy())
        session.tool_rounds.ask = self.asker
        # "Always allow" chosen during a reply is remembered across restarts.
        session.sig_generation_finished.connect(lambda _item: self.save_policy())
        self.dialog: ToolsWindow | None = None

    @classmethod
    def install(cls, window: QWidget, session: ChatSession) -> ToolsFeature:

        return cls(window, session, data_dir())

    def save(self) -> None:
        self.settings.save_servers(self.hub.servers)
        self.save_policy()

    def save_policy(self) -> None:
        try:
            self.settings.save_policy(self.session.tool_rounds.policy)
        except OSError as exc:  # a read-only data folder: the choice holds for this run
            self.session.sig_notice.emit(str(exc))

    def on_window_tools_requested(self) -> None:
        if self.dialog is None:
            self.dialog = ToolsWindow(
                self.hub,
                self.session.tool_rounds.policy,
                self.secrets,
                lambda: self.session.conversation_id,
                self.save,
                self.window,
            )
            if self.load_error:
                self.dialog.editor.setPlainText(self.settings.servers_text())
                self.dialog.error.setText(self.load_error)
        self.dialog.show()
        self.dialog.raise_()

    def close(self) -> None:
        """Stop every server (blocking, bounded); called once on quit."""
        self.hub.close()
