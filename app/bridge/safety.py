"""The engine's safety review as the app configures it (`app.chat.safety_config.SafetyConfig`).

Owns opening the review for a configuration (its blocklist parsed, its guard model opened
locally or at an endpoint, a guard that does not open kept as one that is down) and checking a
blocklist for the Preferences with the engine's own parser. Does not own when a review is
opened or kept (`app.bridge.engine_bridge`), nor the review itself (`engine.safety`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.bridge.factories import local_engine_factory, remote_engine_factory
from engine.errors import EngineError
from engine.safety.blocklist import Blocklist
from engine.safety.guard import Guard, UnavailableGuard
from engine.safety.review import (
    SAFETY_SYSTEM_PROMPT,
    SafetyOptions,
    SafetyReview,
    overlap_helps,
)

if TYPE_CHECKING:
    from app.chat.safety_config import SafetyConfig


def blocklist_problem(text: str) -> str | None:
    """Why a blocklist cannot be used (one line, naming the entry), or None: the engine's own
    parser, for the Preferences to check before saving."""
    try:
        Blocklist.parse(text)
    except EngineError as exc:
        return str(exc)
    return None


def open_review(config: SafetyConfig) -> SafetyReview:
    """The engine's review for ``config``. A bad blocklist raises InvalidParamsError (the
    reply fails with it); a guard that does not open is a guard that is down."""
    options = SafetyOptions(
        strict=config.strict,
        required=config.required,
        system_prompt=SAFETY_SYSTEM_PROMPT if config.system_prompt else "",
        overlap=overlap_helps(),  # the guard checks beside the reply, given cores to spare
    )
    blocklist = Blocklist.parse(config.blocklist)
    name, url = config.guard_model.strip(), config.guard_base_url.strip()
    if not name:
        return SafetyReview(None, blocklist, options)
    if url:  # no key: a guard endpoint is expected on this machine or the local network
        factory = remote_engine_factory(url, name, lambda: None, None)
    else:
        factory = local_engine_factory(name)
    try:
        guard = Guard(factory(lambda _progress: None), f"{name} at {url}" if url else name)
    except EngineError as exc:  # a file that does not open, an endpoint that does not answer
        guard = UnavailableGuard(name, str(exc))
    return SafetyReview(guard, blocklist, options)
