"""Safety: a guard model's review of prompts and replies, the blocklist, and the language and
script of a text (`engine.safety.language`). The guard's prompt formats and answers:
`engine.safety.qwen3guard`.

A room of the loop layer (see the engine layers contract in pyproject.toml): it may import the
runners, the fast path, arch, gguf, kernels and the boundary, never serve, remote or cli.
"""
