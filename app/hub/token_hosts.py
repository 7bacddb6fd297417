"""Which mirrors the app's saved Hub token may go to: asked once per mirror, remembered.

The token in the keyring was made for huggingface.co. A mirror (hf-mirror.com, a company's
own) is run by someone else, so the token goes to one only after the user said yes for that
mirror's origin (scheme, host and port); the answer, yes or no, is kept in the settings and
never asked again. The engine enforces it: a token goes only to huggingface.co and the origins
in `HubAccess.token_hosts` (`engine.hub.transport.token_allowed`), never across a redirect to
another host. Qt-free; the question itself is `app.views.models.hub_tab`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.hub.transport import DEFAULT_ENDPOINT, origin_of


def host_to_ask_about(endpoint: str, has_token: bool, answers: Mapping[str, bool]) -> str | None:
    """The mirror origin to ask about now: there is a token, ``endpoint`` is not huggingface.co
    and its origin was never answered. None: nothing to ask."""
    origin = origin_of(endpoint)
    if not has_token or origin == origin_of(DEFAULT_ENDPOINT) or origin in answers:
        return None
    return origin


def approved_hosts(answers: Mapping[str, bool]) -> frozenset[str]:
    """The origins the user said yes for (what `HubAccess.token_hosts` carries)."""
    return frozenset(origin for origin, allowed in answers.items() if allowed)
