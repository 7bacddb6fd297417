"""Where the tools' settings live: ``mcp.json`` (the ``mcpServers`` JSON, as LM Studio and
Claude Desktop keep theirs, with every env value replaced by the keyring mark) and
``tool_policy.json`` (switches and "always allow"), both in Hearth's data folder.

A damaged file is never overwritten silently: `load_servers` raises `ConfigError` (shown in
the Tools window) and the policy falls back to everything off. Does not own parsing
(`app.mcp.config`) or the keyring. Qt-free.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.mcp.approval import ApprovalPolicy
from app.mcp.config import ServerConfig, dump_servers, parse_servers

SERVERS_FILE = "mcp.json"
POLICY_FILE = "tool_policy.json"


class ToolSettings:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def servers_text(self) -> str:
        path = self.folder / SERVERS_FILE
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def load_servers(self) -> list[ServerConfig]:
        return parse_servers(self.servers_text())

    def save_servers(self, servers: list[ServerConfig]) -> None:
        _write(self.folder / SERVERS_FILE, dump_servers(servers))

    def load_policy(self) -> ApprovalPolicy:
        path = self.folder / POLICY_FILE
        return ApprovalPolicy.from_json(path.read_text(encoding="utf-8") if path.exists() else "")

    def save_policy(self, policy: ApprovalPolicy) -> None:
        _write(self.folder / POLICY_FILE, policy.to_json())


def _write(path: Path, text: str) -> None:
    # Write then rename: a crash mid-write leaves the old file, never half a one.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
