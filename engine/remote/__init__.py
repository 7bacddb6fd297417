"""OpenAI-compatible remote endpoints as a backend (`RemoteEngine`) and their SSE stream parsing."""
