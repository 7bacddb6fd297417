"""Tiny MCP servers for the tool tests, written with the official ``mcp`` SDK (``MCPServer``,
FastMCP's new name), run as real stdio subprocesses: ``echo`` answers, ``crash`` exits the
process mid-call, ``hang`` never answers (the hub's timeout must end the call)."""

from __future__ import annotations

import sys
from pathlib import Path

from app.mcp.config import ServerConfig

SERVER_SOURCE = '''
import os, sys, time
from mcp.server.mcpserver import MCPServer

server = MCPServer("hearth-test")

@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"{a} + {b} = {a + b} (secret {os.environ.get('TEST_SECRET', 'none')})"

@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals; it may contain markup, which must stay text."""
    return "<b>" + text.upper() + "</b>"

@server.tool()
def crash() -> str:
    """Exit the server process mid-call."""
    os._exit(3)

@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"

server.run()
'''


def write_server(folder: Path) -> Path:
    path = folder / "mcp_test_server.py"
    path.write_text(SERVER_SOURCE, encoding="utf-8")
    return path


def server_config(folder: Path, name: str = "demo", timeout_s: float = 30.0) -> ServerConfig:
    script = write_server(folder)
    return ServerConfig(name, sys.executable, (str(script),), timeout_s=timeout_s)
