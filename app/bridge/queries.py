"""Small engine answers the app asks for, with no model and no I/O.

Owns `language_of` (the language and script of a text, `engine.safety.language`) and
`governor_reading` (what the decode thread governor measured, `engine.kernels.governor`).
Does not own running a model (`app.bridge.engine_bridge`).
"""

from __future__ import annotations

from engine.kernels.governor import latest_snapshot
from engine.safety.language import detect_language


def language_of(text: str) -> str:
    """The BCP 47 tag of ``text``'s language and script ("zh-Hant", "en", "und"), for Chinese
    replies that follow their question (`engine.safety.language`; no model, no I/O)."""
    return detect_language(text).tag


def governor_reading() -> tuple[int, int, int] | None:
    """What the decode thread governor measured: (cores, threads it settled on, slowdowns
    seen), for "Why is this slow?"; None when no governor runs (`engine.kernels.governor`)."""
    snap = latest_snapshot()
    return None if snap is None else (snap.cores, snap.threads, snap.slowdowns)
