"""`State`: the four states of a `ChatSession` (re-exported by `app.chat.session`).

Its own module so that the session and the code that drives a reply for it
(`app.chat.replying`) can share it without importing each other. Owns the names only; the
transitions live in the session (and its mixins) and in `app.chat.replying`.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    IDLE = "idle"
    LOADING = "loading"
    GENERATING = "generating"
    STOPPING = "stopping"
