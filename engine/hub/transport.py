"""How the hub package talks to the Hugging Face Hub or a mirror.

Owns choosing the endpoint (an explicit one, else HF_ENDPOINT read at call time so a mirror set
in the app or the environment takes effect without a restart, else huggingface.co), the token
(explicit, else HF_TOKEN / huggingface_hub's stored login), the HTTP session and headers
(huggingface_hub's own), and turning its exceptions into the engine's typed errors with a
message a user can act on. Does not own what is requested (`search`, `download`,
`remote_header`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from engine.errors import (
    GatedRepoError,
    HubError,
    HubOfflineError,
    RemoteFileNotFoundError,
    RepoNotFoundError,
)

DEFAULT_ENDPOINT = "https://huggingface.co"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0


def resolve_endpoint(endpoint: str | None = None) -> str:
    """``endpoint``, else $HF_ENDPOINT, else huggingface.co; without a trailing slash."""
    chosen = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).strip()
    return chosen.rstrip("/")


# Origins (comma-separated) of mirrors the user lets the ambient Hub token go to. The token
# in $HF_TOKEN or huggingface_hub's login is for huggingface.co: sent to every configured
# mirror, the one-click public mirror included, it leaked to a third party (issue 22 note).
TOKEN_MIRRORS_ENV = "HEARTH_TOKEN_MIRRORS"


def resolve_token(token: str | None = None, *, where: str | None = None) -> str | None:
    """``token`` (the caller's choice for this endpoint), else $HF_TOKEN or huggingface_hub's
    stored login when ``where`` (an endpoint or URL; None: the endpoint in use) is the Hub or
    a mirror listed in $HEARTH_TOKEN_MIRRORS; None: anonymous."""
    if token:
        return token
    if not ambient_token_allowed(where):
        return None
    from huggingface_hub import get_token

    return get_token()


def ambient_token_allowed(where: str | None = None) -> bool:
    """Whether the ambient Hub token may go to ``where`` (an endpoint or a URL)."""
    from urllib.parse import urlsplit

    origin = urlsplit(where or resolve_endpoint())[:2]
    allowed = [DEFAULT_ENDPOINT, *os.environ.get(TOKEN_MIRRORS_ENV, "").split(",")]
    return origin in {urlsplit(a.strip().rstrip("/"))[:2] for a in allowed if a.strip()}


def hub_api(*, token: str | None = None, endpoint: str | None = None) -> Any:
    """A huggingface_hub `HfApi` for this endpoint and token."""
    from huggingface_hub import HfApi

    where = resolve_endpoint(endpoint)
    check_resolves(where)  # offline: fail in milliseconds, not after five retries
    return HfApi(endpoint=where, token=resolve_token(token, where=where) or False)


def file_url(repo_id: str, filename: str, *, endpoint: str | None = None) -> str:
    """The ``resolve/main`` URL of a file in a model repo."""
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo_id, filename, endpoint=resolve_endpoint(endpoint))


def hub_headers(
    token: str | None = None, *, send_token: bool = True, where: str | None = None
) -> dict[str, str]:
    """huggingface_hub's request headers (user agent, Authorization when there is a token and
    ``send_token``; the ambient token only where `ambient_token_allowed`)."""
    from huggingface_hub.utils import build_hf_headers

    chosen = resolve_token(token, where=where) if send_token else None
    headers: dict[str, str] = build_hf_headers(token=chosen or False)
    headers["Accept-Encoding"] = "identity"  # byte offsets must be the file's own
    return headers


def is_hub_url(url: str, *, endpoint: str | None = None) -> bool:
    """Whether ``url`` is on the Hub or the configured mirror: only those get the token."""
    from urllib.parse import urlsplit

    origin = urlsplit(url)[:2]
    return origin in {urlsplit(resolve_endpoint(endpoint))[:2], urlsplit(DEFAULT_ENDPOINT)[:2]}


def session() -> Any:
    """huggingface_hub's shared HTTP client (an httpx client; honours its proxy settings)."""
    from huggingface_hub import get_session

    return get_session()


def timeout() -> Any:
    import httpx2

    return httpx2.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


def raise_for_status(response: Any) -> None:
    """huggingface_hub's status check (it reads the Hub's X-Error-Code headers)."""
    from huggingface_hub.utils import hf_raise_for_status

    hf_raise_for_status(response)


@contextlib.contextmanager
def hub_errors(
    *, what: str, repo_id: str | None = None, endpoint: str | None = None
) -> Iterator[None]:
    """Re-raise huggingface_hub and transport errors as the engine's typed errors.

    ``what`` names the request in the message ("Qwen/Qwen2.5-7B-Instruct-GGUF", a file URL).
    """
    import httpx2
    from huggingface_hub import errors as hf

    where = resolve_endpoint(endpoint)
    repo = repo_id or what
    try:
        yield
    except hf.GatedRepoError as exc:
        raise GatedRepoError(
            f"{repo} is gated: accept its licence on {where}/{repo} while logged in, then give "
            "a Hugging Face access token (HF_TOKEN, or the token field in Settings)"
        ) from exc
    except hf.RepositoryNotFoundError as exc:
        raise RepoNotFoundError(
            f"{repo} was not found on {where} (check the spelling; a private repo needs a token)"
        ) from exc
    except (hf.RemoteEntryNotFoundError, hf.EntryNotFoundError) as exc:
        raise RemoteFileNotFoundError(f"{what} was not found on {where} (HTTP 404)") from exc
    except hf.OfflineModeIsEnabled as exc:
        raise HubOfflineError("HF_HUB_OFFLINE is set: the Hub is not contacted") from exc
    except hf.HfHubHTTPError as exc:
        raise _http_error(exc, what, where) from exc
    except httpx2.TransportError as exc:
        raise HubOfflineError(
            f"cannot reach {where} ({_reason(exc)}); check the connection, or set "
            "a mirror as HF_ENDPOINT (e.g. https://hf-mirror.com)"
        ) from exc


def check_resolves(endpoint: str) -> None:
    """`HubOfflineError` at once when the endpoint's host name does not resolve.

    With no connection, huggingface_hub retries a failed lookup five times with back-off
    (~23 s here) before giving up; a lookup answers in milliseconds. Skipped behind a proxy,
    which resolves names itself.
    """
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    host = urlsplit(endpoint).hostname
    if not host:
        return
    try:
        socket.getaddrinfo(host, 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise HubOfflineError(
            f"cannot reach {endpoint}: the name {host} does not resolve (no connection?); "
            "check the connection, or set a mirror as HF_ENDPOINT (e.g. https://hf-mirror.com)"
        ) from exc


def _reason(exc: BaseException) -> str:
    """A transport failure in words, without the OS's raw "[Errno -2]" codes."""
    text = str(exc)
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "the name does not resolve"
    if "timed out" in text.lower() or "timeout" in type(exc).__name__.lower():
        return "it did not answer in time"
    if "refused" in text.lower():
        return "the connection was refused"
    return "the connection failed"


def _http_error(exc: Any, what: str, where: str) -> HubError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status == 404:
        return RemoteFileNotFoundError(f"{what} was not found on {where} (HTTP 404)")
    if status in (401, 403):
        return GatedRepoError(
            f"{where} refused access to {what} (HTTP {status}): give a Hugging Face access "
            "token with read access (HF_TOKEN, or the token field in Settings)"
        )
    if status == 429:
        return HubError(f"{where} is rate-limiting requests (HTTP 429); wait a minute and retry")
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return HubError(f"{where} answered {what} with an error: {first}")
