"""`McpHub`: the app's MCP servers, started on demand, called with timeouts, stopped on close.

Built on the official ``mcp`` SDK (``mcp.Client`` over stdio or streamable HTTP). The SDK runs
on **its own thread with its own asyncio loop**, not on the app's qasync loop: a server that
floods, hangs or dies then costs that thread, never the GUI; the SDK's anyio task groups and
subprocess handling run on the plain asyncio loop they are written and tested for (qasync's
Qt-driven loop has no subprocess support on Windows); and a server's connection lives in one
long-lived task there, as anyio's cancel scopes require. The app awaits hub calls through
`asyncio.wrap_future`, so cancelling the awaiting task (Stop) cancels the call on the hub's loop.

Every failure (cannot start, crashed, timed out, protocol error) comes back as a `ToolResult`
with ``is_error`` and a one-line text, which the model reads as the tool's answer; a failed
connection is dropped so the next call starts the server afresh. What a server sends is bounded:
requests of its own (sampling, elicitation, roots: answered "not supported") and notifications
past `MAX_SERVER_MESSAGES` during one call drop the connection; tools past
`MAX_TOOLS_PER_SERVER`, descriptions past `DESCRIPTION_LIMIT` and schemas past `SCHEMA_LIMIT`
are cut or left out. Does not own the configuration
text (`app.mcp.config`), approval (`app.mcp.approval`) or any widget. Qt-free.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.mcp.config import ServerConfig

T = TypeVar("T")
RESULT_LIMIT = 20_000  # characters of one tool's answer kept for the model and the store
START_TIMEOUT_S = 60.0  # a first start may install a package (npx -y, uvx): longer than a call
# Requests and notifications a server may send between two of our calls. Hearth offers no
# sampling, elicitation or roots, so an honest server sends some log lines (each counted
# twice: its callback and the message handler); 50,000 sampling
# requests during one call cost ~700 MB and stalled the hub's loop for 2 s before this bound.
MAX_SERVER_MESSAGES = 1_000
MAX_TOOLS_PER_SERVER = 128  # more is a server bug; the model could not choose among them
DESCRIPTION_LIMIT = 2_000  # characters of a tool's description the model reads
SCHEMA_LIMIT = 20_000  # characters of a tool's input schema (JSON); a larger one is left out


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    description: str = ""
    schema: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Stable id for switches and "always allow": ``server/tool``."""
        return f"{self.server}/{self.name}"


@dataclass(frozen=True)
class ToolResult:
    text: str  # plain text; never rendered as HTML
    is_error: bool = False


@dataclass
class _Connection:
    config: ServerConfig
    ready: asyncio.Future[None]
    stop: asyncio.Event
    client: Any = None
    task: asyncio.Task[None] | None = None
    received: int = 0  # server requests and notifications since our last call began
    flooded: bool = False  # it sent more than MAX_SERVER_MESSAGES: the connection is dropped

    def count_message(self) -> None:
        """One message from the server; past the bound the connection is dropped."""
        self.received += 1
        if self.received > MAX_SERVER_MESSAGES and not self.flooded:
            self.flooded = True
            self.stop.set()  # `_serve` leaves the client: its pending calls fail at once


class McpHub:
    """Owns the hub thread and one connection per started server."""

    def __init__(self, resolve: Callable[[ServerConfig], ServerConfig] | None = None) -> None:
        # ``resolve`` fills env secrets in just before a start (see `config.resolve_secrets`).
        self._resolve = resolve or (lambda s: s)
        self._servers: dict[str, ServerConfig] = {}
        self._conns: dict[str, _Connection] = {}
        self.errors: dict[str, str] = {}  # the last failure per server, for the Tools window
        self.start_timeout_s = START_TIMEOUT_S
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)
        self._thread.start()
        self._closed = False

    # -- configuration ----------------------------------------------------------------------
    def configure(self, servers: list[ServerConfig]) -> None:
        """Use ``servers`` from now on; a removed or changed server is stopped."""
        new = {s.name: s for s in servers}
        for name, old in list(self._servers.items()):
            if new.get(name) != old:
                self._submit(self._stop(name))
        self._servers = new
        self.errors = {k: v for k, v in self.errors.items() if k in new}

    @property
    def servers(self) -> list[ServerConfig]:
        return list(self._servers.values())

    def running(self, name: str) -> bool:
        conn = self._conns.get(name)
        return conn is not None and conn.client is not None

    # -- calls from the app's loop ----------------------------------------------------------
    async def list_tools(self, name: str) -> list[ToolInfo]:
        """Start ``name`` if needed and list its tools (raises `ToolCallError` on failure)."""
        return await self._await(self._list_tools(name))

    async def all_tools(self) -> list[ToolInfo]:
        """Every server's tools; a failing server is skipped (its error in `errors`)."""
        tools: list[ToolInfo] = []
        for name in list(self._servers):
            with contextlib.suppress(ToolCallError):
                tools += await self.list_tools(name)
        return tools

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool call; every failure is an error `ToolResult`, never an exception."""
        try:
            return await self._await(self._call(server, tool, arguments))
        except ToolCallError as exc:
            return ToolResult(str(exc), is_error=True)

    async def stop(self, name: str) -> None:
        await self._await(self._stop(name))

    def close(self, timeout_s: float = 8.0) -> None:
        """Stop every server (their processes end) and the hub thread; blocking, idempotent."""
        if self._closed:
            return
        self._closed = True
        # A server that will not die must not keep the app from quitting.
        with contextlib.suppress(Exception):
            self._submit(self._stop_all()).result(timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout_s)

    # -- on the hub's loop ------------------------------------------------------------------
    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise ToolCallError("the tools were shut down")
        return await asyncio.wrap_future(self._submit(coro))

    async def _connect(self, name: str) -> Any:
        config = self._servers.get(name)
        if config is None:
            raise ToolCallError(f"no MCP server named {name!r} is configured")
        conn = self._conns.get(name)
        if conn is None or conn.task is None or conn.task.done():
            conn = _Connection(config, self._loop.create_future(), asyncio.Event())
            self._conns[name] = conn
            conn.task = self._loop.create_task(self._serve(conn))
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), self.start_timeout_s)
        except TimeoutError:
            await self._stop(name)
            raise self._fail(name, f"did not start within {self.start_timeout_s:g} s") from None
        except ToolCallError:
            raise
        except Exception as exc:
            raise self._fail(name, f"could not start: {_one_line(exc)}") from None
        return conn.client

    async def _serve(self, conn: _Connection) -> None:
        """Hold one server's connection open until asked to stop (one task: anyio's rule)."""
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        try:
            config = self._resolve(conn.config)
            target: Any = config.url or StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env or None
            )
            async with Client(
                target, read_timeout_seconds=config.timeout_s, **_bounded_callbacks(conn)
            ) as client:
                conn.client = client
                if not conn.ready.done():
                    conn.ready.set_result(None)
                await conn.stop.wait()
        except BaseException as exc:  # reported through `ready` / `errors`
            if not conn.ready.done():
                conn.ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError())
            elif not conn.stop.is_set():
                self.errors[conn.config.name] = f"stopped: {_one_line(exc)}"
        finally:
            conn.client = None

    async def _list_tools(self, name: str) -> list[ToolInfo]:
        client = await self._connect(name)
        timeout = self._servers[name].timeout_s
        try:
            listed = await asyncio.wait_for(client.list_tools(), timeout)
        except Exception as exc:
            await self._stop(name)
            raise self._fail(name, f"listing tools failed: {_one_line(exc)}") from None
        self.errors.pop(name, None)
        tools, skipped = bounded_tools(name, listed.tools)
        if skipped:
            self.errors[name] = skipped
        return tools

    async def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        client = await self._connect(server)
        conn = self._conns[server]
        conn.received = 0
        timeout = self._servers[server].timeout_s
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout)
        except Exception as exc:
            await self._stop(server)  # a hung or broken server is restarted on the next call
            if conn.flooded:
                raise self._flooded(server, tool) from None
            if isinstance(exc, TimeoutError):
                raise self._fail(server, f"{tool} did not answer within {timeout:g} s") from None
            raise self._fail(server, f"{tool} failed: {_one_line(exc)}") from None
        if conn.flooded:  # it answered, but the connection is already being dropped
            await self._stop(server)
            raise self._flooded(server, tool)
        return ToolResult(result_text(result), bool(result.is_error))

    def _flooded(self, server: str, tool: str) -> ToolCallError:
        return self._fail(
            server,
            f"{tool}: the server sent more than {MAX_SERVER_MESSAGES} requests or "
            "notifications during one call; disconnected",
        )

    async def _stop(self, name: str) -> None:
        conn = self._conns.pop(name, None)
        if conn is None or conn.task is None:
            return
        conn.stop.set()
        try:  # the SDK closes stdin, then terminates and kills the process, each bounded
            await asyncio.wait_for(asyncio.shield(conn.task), 10.0)
        except BaseException:  # stopping never raises
            conn.task.cancel()

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(n) for n in list(self._conns)))

    def _fail(self, name: str, message: str) -> ToolCallError:
        self.errors[name] = message
        return ToolCallError(f"MCP server {name!r}: {message}")


class ToolCallError(Exception):
    """A server could not be reached or did not answer; ``str()`` is one line."""


def _bounded_callbacks(conn: _Connection) -> dict[str, Any]:
    """The SDK's callbacks for what a server sends on its own: each counted on ``conn``
    (`_Connection.count_message`), requests answered "not supported" as the SDK's defaults."""
    from mcp import types

    def refuse(what: str) -> Any:
        async def answer(*_args: Any) -> Any:
            conn.count_message()
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{what} not supported")

        return answer

    async def notified(*_args: Any) -> None:
        conn.count_message()

    return {
        "sampling_callback": refuse("Sampling"),
        "elicitation_callback": refuse("Elicitation"),
        "list_roots_callback": refuse("List roots"),
        "logging_callback": notified,
        "message_handler": notified,
    }


def bounded_tools(server: str, listed: list[Any]) -> tuple[list[ToolInfo], str]:
    """A server's listed tools within the bounds (module docstring), and a one-line note of
    what was left out ("" when nothing was)."""
    tools, oversized = [], 0
    for t in listed[:MAX_TOOLS_PER_SERVER]:
        schema = dict(t.input_schema or {})
        if len(json.dumps(schema, ensure_ascii=False)) > SCHEMA_LIMIT:
            oversized += 1
            continue
        tools.append(ToolInfo(server, t.name, (t.description or "")[:DESCRIPTION_LIMIT], schema))
    notes = []
    if len(listed) > MAX_TOOLS_PER_SERVER:
        notes.append(
            f"{len(listed) - MAX_TOOLS_PER_SERVER} tools past the first {MAX_TOOLS_PER_SERVER}"
        )
    if oversized:
        notes.append(f"{oversized} with a schema over {SCHEMA_LIMIT} characters")
    return tools, ("left out " + " and ".join(notes)) if notes else ""


def result_text(result: Any) -> str:
    """A tool's answer as plain text: text blocks as they are, other blocks named."""
    parts = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'content'}: {getattr(block, 'mime_type', '') or 'binary'}]")
    if not parts and result.structured_content is not None:
        parts.append(str(result.structured_content))
    text = "\n".join(parts)
    if len(text) > RESULT_LIMIT:
        text = text[:RESULT_LIMIT] + f"\n[... {len(text) - RESULT_LIMIT} more characters cut]"
    return text


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _one_line(exc.exceptions[0])
    return text[:300]
