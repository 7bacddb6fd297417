"""The Tools (MCP) window, the approval dialog and the Tools fold under a reply."""
