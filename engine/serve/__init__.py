"""The local OpenAI-compatible HTTP server over an `Engine` and its request/response schema."""
