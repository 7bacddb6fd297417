"""The tools' widgets offscreen: the Tools fold shows tool output as text (never HTML), the
approval dialog answers once / always / deny (closing denies), and the Tools window checks the
JSON (one-line error, text kept), moves env values to the keyring, lists a real server's tools
and switches them per chat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer

from app.listmodels.messages import MessageItem
from app.mcp.approval import ApprovalPolicy, Decision
from app.mcp.config import SECRET_MARK
from app.mcp.hub import McpHub, ToolInfo
from app.mcp.storage import ToolSettings
from app.views.chat.message_text import message_html
from app.views.tools import tools_fold
from app.views.tools.approval_dialog import DialogAsker
from app.views.tools.tools_window import ALL_CHATS, THIS_CHAT, ToolsWindow
from engine.types import ToolCall
from tests.app.mcp_servers import server_config
from tests.app.test_mcp_hub import DictSecrets

HOSTILE = "<img src='http://evil/x.png'><a href='hearth-tools:toggle'>click</a>"


def test_the_tools_fold_shows_output_as_plain_text(qapp: Any) -> None:
    calls = [{"name": "fetch", "arguments": '{"url": "x"}', "result": HOSTILE, "status": "ok"}]
    item = MessageItem.of("m", "assistant", "Done.", tool_calls=calls)
    folded = message_html(item, dark=False)
    assert "Tools: fetch" in folded and "evil" not in folded
    assert tools_fold.handle_click(tools_fold.TOGGLE_HREF, item) and item.tools_open
    shown = message_html(item, dark=False)
    assert "&lt;img src=" in shown and "<img" not in shown
    assert shown.count("<a ") == 1  # only the header's own link; the output's is text


def _answer_with(asker: DialogAsker, button: str) -> None:
    def click() -> None:
        dialog = asker.dialog
        if dialog is None:
            QTimer.singleShot(10, click)
            return
        if button == "close":
            dialog.close()
        else:
            getattr(dialog, button).click()

    QTimer.singleShot(0, click)


def test_the_approval_dialog_answers(run: Any) -> None:
    asker = DialogAsker(None)
    tool = ToolInfo("demo", "add", "Add two integers.")
    call = ToolCall("c1", "add", '{"a": 1}')
    for button, decision in [
        ("once", Decision.ONCE), ("always", Decision.ALWAYS),
        ("deny", Decision.DENY), ("close", Decision.DENY),
    ]:  # fmt: skip
        _answer_with(asker, button)
        assert run(asker(tool, call)) == decision
    _answer_with(asker, "once")
    task = asyncio.ensure_future(asker(tool, call))
    task.cancel()  # Stop: the wait ends and the dialog goes
    run(asyncio.sleep(0.05))
    assert asker.dialog is None


def test_the_tools_window_saves_lists_and_switches(run: Any, tmp_path: Path) -> None:
    hub, policy, secrets = McpHub(), ApprovalPolicy(), DictSecrets()
    settings = ToolSettings(tmp_path)
    chat = "chat-1"

    def save() -> None:
        settings.save_servers(hub.servers)
        settings.save_policy(policy)

    window = ToolsWindow(hub, policy, secrets, lambda: chat, save)
    try:
        window.editor.setPlainText('{"mcpServers": {"x": {"command": 3}}}')
        assert not window.save_servers()
        assert "'command' and 'url' must be strings" in window.error.text()
        assert "command" in window.editor.toPlainText()  # what was typed is kept
        config = server_config(tmp_path)
        spec = {"command": config.command, "args": list(config.args), "env": {"TOKEN": "t0p"}}
        window.editor.setPlainText(json.dumps({"mcpServers": {"demo": spec}}))
        assert window.save_servers()
        assert secrets.saved == {"mcp:demo:TOKEN": "t0p"}
        assert "t0p" not in (tmp_path / "mcp.json").read_text() and SECRET_MARK in (
            tmp_path / "mcp.json"
        ).read_text(encoding="utf-8")
        run(window.list_tools())
        top: Any = window.tree.topLevelItem(0)
        names = [top.child(i).text(0) for i in range(top.childCount())]
        assert sorted(names) == ["add", "crash", "hang", "shout"]
        add: Any = top.child(names.index("add"))
        add.setCheckState(THIS_CHAT, Qt.CheckState.Checked)
        assert policy.is_enabled(chat, "demo/add") and not policy.is_enabled("other", "demo/add")
        top = window.tree.topLevelItem(0)
        top.child(names.index("add")).setCheckState(ALL_CHATS, Qt.CheckState.Checked)
        assert policy.is_enabled("other", "demo/add")
        assert settings.load_policy().enabled == {"demo/add": True}
    finally:
        window.deleteLater()
        hub.close()


def test_a_broken_mcp_json_starts_nothing_and_is_shown(qapp: Any, tmp_path: Path) -> None:
    from app.bridge import DbWorker, EngineBridge
    from app.chat.session import ChatSession
    from app.views.tools.feature import ToolsFeature

    (tmp_path / "mcp.json").write_text('{"mcpServers": {"a": {"url": "ftp://x"}}', "utf-8")
    session = ChatSession(EngineBridge(), DbWorker())  # no model, no store: not needed here
    feature = ToolsFeature(None, session, tmp_path)  # type: ignore[arg-type]
    try:
        assert "not valid JSON" in feature.load_error and not feature.hub.servers
        feature.on_window_tools_requested()
        assert feature.dialog is not None and "not valid JSON" in feature.dialog.error.text()
        assert feature.dialog.editor.toPlainText().startswith('{"mcpServers"')  # kept as typed
        session.tool_rounds.policy.always.add("a/x")
        feature.save_policy()
        assert "a/x" in (tmp_path / "tool_policy.json").read_text(encoding="utf-8")
    finally:
        feature.close()
        session.bridge.close_blocking()
        session.db.close_blocking()
