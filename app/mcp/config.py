"""MCP server configuration: the ``{"mcpServers": {...}}`` JSON other MCP clients use.

A stdio server is ``{"command": ..., "args": [...], "env": {...}}``; a streamable HTTP one is
``{"url": "http://..."}``. Owns parsing (one-line errors naming the server and field),
writing back, and moving ``env`` values out to a secret store (the OS keyring): what the app's
settings keep is the JSON with every env value replaced by `SECRET_MARK`. Does not own the
settings file, the keyring itself or running servers (`app.mcp.hub`). Qt-free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

SECRET_MARK = "<in keyring>"  # what the settings and the editor show in place of an env value


class ConfigError(ValueError):
    """The configuration JSON is wrong; ``str()`` is one line for the user."""


class SecretStore(Protocol):
    """What `app.system.secrets.KeyStore` offers (tests pass a dict-backed one)."""

    def get(self, endpoint_id: str) -> str | None: ...
    def set(self, endpoint_id: str, key: str) -> None: ...
    def set_session_key(self, endpoint_id: str, key: str) -> None: ...


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    timeout_s: float = 60.0  # one tool call (and the start-up) may take this long

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigError("a server needs a name")
        if bool(self.command) == bool(self.url):
            raise ConfigError(f"server {self.name!r}: give either 'command' or 'url', not both")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"server {self.name!r}: url must start with http(s)://")
        if not 0 < self.timeout_s <= 3600:
            raise ConfigError(f"server {self.name!r}: timeout must be in (0, 3600] s")

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def to_json(self) -> dict[str, Any]:
        if self.url:
            out: dict[str, Any] = {"url": self.url}
        else:
            out = {"command": self.command, "args": list(self.args)}
            if self.env:
                out["env"] = dict(self.env)
        if self.timeout_s != 60.0:
            out["timeout"] = self.timeout_s
        return out


def parse_servers(text: str) -> list[ServerConfig]:
    """Servers from the JSON text (``{"mcpServers": {...}}``, or the inner object alone)."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a JSON object")
    servers = data.get("mcpServers", data)
    if not isinstance(servers, dict):
        raise ConfigError("'mcpServers' must be an object of name: server")
    return [_server(name, spec) for name, spec in servers.items()]


def _server(name: str, spec: object) -> ServerConfig:
    if not isinstance(spec, dict):
        raise ConfigError(f"server {name!r} must be an object")
    args, env = spec.get("args", []), spec.get("env", {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"server {name!r}: 'args' must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"server {name!r}: 'env' must be an object of string values")
    timeout = spec.get("timeout", 60.0)
    if not isinstance(timeout, int | float):
        raise ConfigError(f"server {name!r}: 'timeout' must be a number of seconds")
    command, url = spec.get("command", ""), spec.get("url", "")
    if not isinstance(command, str) or not isinstance(url, str):
        raise ConfigError(f"server {name!r}: 'command' and 'url' must be strings")
    return ServerConfig(name, command, tuple(args), dict(env), url, float(timeout))


def dump_servers(servers: list[ServerConfig]) -> str:
    return json.dumps({"mcpServers": {s.name: s.to_json() for s in servers}}, indent=2)


def _secret_id(server: str, var: str) -> str:
    return f"mcp:{server}:{var}"


def store_secrets(servers: list[ServerConfig], secrets: SecretStore) -> list[ServerConfig]:
    """Move every typed env value into ``secrets``; return the servers with `SECRET_MARK`s.

    Without a usable keyring a value is kept for this session only (never written to a file).
    """
    out = []
    for s in servers:
        env = {}
        for var, value in s.env.items():
            if value != SECRET_MARK:
                try:
                    secrets.set(_secret_id(s.name, var), value)
                except Exception:  # no keyring: this run only
                    secrets.set_session_key(_secret_id(s.name, var), value)
            env[var] = SECRET_MARK
        out.append(_replace_env(s, env))
    return out


def resolve_secrets(server: ServerConfig, secrets: SecretStore) -> ServerConfig:
    """The server with its env values read back from ``secrets`` (to start it)."""
    env = {}
    for var, value in server.env.items():
        if value == SECRET_MARK:
            try:
                found = secrets.get(_secret_id(server.name, var))
            except Exception:
                found = None
            if found is None:
                raise ConfigError(
                    f"server {server.name!r}: the value of {var} is not in the keyring any "
                    "more; type it again in the Tools window"
                )
            value = found
        env[var] = value
    return _replace_env(server, env)


def _replace_env(s: ServerConfig, env: dict[str, str]) -> ServerConfig:
    return ServerConfig(s.name, s.command, s.args, env, s.url, s.timeout_s)
