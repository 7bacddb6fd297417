"""The MCP hub against a real stdio server (official SDK) and the configuration format: tools
listed and called with env values read back from the keyring, a server that cannot start is a
one-line error, bad JSON is one line. (A crashing and a hanging server: test_mcp_session.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.mcp.config import (
    SECRET_MARK,
    ConfigError,
    dump_servers,
    parse_servers,
    resolve_secrets,
    store_secrets,
)
from app.mcp.hub import McpHub
from tests.app.mcp_servers import server_config


class DictSecrets:
    def __init__(self) -> None:
        self.saved: dict[str, str] = {}

    def get(self, endpoint_id: str) -> str | None:
        return self.saved.get(endpoint_id)

    def set(self, endpoint_id: str, key: str) -> None:
        self.saved[endpoint_id] = key

    def set_session_key(self, endpoint_id: str, key: str) -> None:
        raise AssertionError("the keyring works here")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    folder = tmp_path_factory.mktemp("mcp")
    secrets = DictSecrets()
    config = server_config(folder, timeout_s=4.0)
    config = store_secrets(
        [type(config)(config.name, config.command, config.args, {"TEST_SECRET": "s3"},
                      timeout_s=config.timeout_s)],
        secrets,
    )[0]  # fmt: skip
    assert config.env == {"TEST_SECRET": SECRET_MARK}
    h = McpHub(resolve=lambda s: resolve_secrets(s, secrets))
    h.configure([config])
    yield h
    h.close()


def test_tools_are_listed_and_called_with_the_secret_from_the_keyring(hub: McpHub) -> None:
    tools = asyncio.run(hub.list_tools("demo"))
    assert {t.name for t in tools} == {"add", "shout", "crash", "hang"}
    add = next(t for t in tools if t.name == "add")
    assert add.key == "demo/add" and add.schema["required"] == ["a", "b"]
    result = asyncio.run(hub.call("demo", "add", {"a": 2, "b": 40}))
    assert not result.is_error and result.text == "2 + 40 = 42 (secret s3)"


def test_a_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    h = McpHub()
    h.configure(
        parse_servers(json.dumps({"mcpServers": {"gone": {"command": str(tmp_path / "nope")}}}))
    )
    try:
        result = asyncio.run(h.call("gone", "x", {}))
        assert result.is_error and "could not start" in result.text
    finally:
        h.close()


def test_the_config_format_round_trips_and_bad_input_is_one_line() -> None:
    text = json.dumps({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "server-fs", "/tmp"], "env": {"K": "v"}},
        "web": {"url": "http://127.0.0.1:8000/mcp"},
    }})  # fmt: skip
    servers = parse_servers(text)
    assert [s.transport for s in servers] == ["stdio", "http"]
    assert parse_servers(dump_servers(servers)) == servers
    for bad, message in [
        ("{", "not valid JSON"),
        ('{"mcpServers": {"a": {}}}', "either 'command' or 'url'"),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "'args' must be a list"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "url must start with http"),
    ]:
        with pytest.raises(ConfigError, match=message) as info:
            parse_servers(bad)
        assert "\n" not in str(info.value)
