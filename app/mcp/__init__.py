"""MCP (Model Context Protocol) client and tool approval for the chat; Qt-free.

`config` parses the ``mcpServers`` JSON and keeps env secrets in the keyring, `hub` runs the
servers (official ``mcp`` SDK, on its own thread and loop), `approval` decides what a chat offers
and asks before every call.
"""
