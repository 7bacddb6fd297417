"""Safety: a guard model's review of prompts and replies, the blocklist, and the language and
script of a text.

- `review`: `SafetyReview` around one turn (the question checked before generation, the reply
  while it streams, the safety system prompt) and `ReviewedBackend` for the server and the CLI;
- `reply_review`: the streaming holdback (`ReplyReview`, `Pace`), checks inline or overlapped;
- `guard`: a guard model behind any `Backend` (a local engine or an endpoint);
- `qwen3guard`: Qwen3Guard-Gen's prompt formats, categories and answers;
- `blocklist`: the user's words and patterns, limited against catastrophic regexes;
- `language`: BCP 47 language and script of a question (zh-Hans, zh-Hant, ja, ko, en, ...).

A room of the loop layer (see the engine layers contract in pyproject.toml): it may import the
runners, the fast path, arch, gguf, kernels and the boundary, never serve, remote or cli.
"""
