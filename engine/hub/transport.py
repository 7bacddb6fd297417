"""How the hub package talks to the Hugging Face Hub or a mirror.

Owns choosing the endpoint (an explicit one, else HF_ENDPOINT read at call time so a mirror set
in the app or the environment takes effect without a restart, else huggingface.co), the token
(explicit, else HF_TOKEN / huggingface_hub's stored login) and where it may go (huggingface.co
and the mirrors the user approved for it; never any other host), the HTTP session and headers
(huggingface_hub's own), and turning its exceptions into the engine's typed errors with a
message a user can act on. Does not own what is requested (`search`, `download`,
`remote_header`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterator
from typing import Any

from engine import settings
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


# Origins (comma-separated) of mirrors the user lets the Hub token go to. A token (the app's
# saved one, $HF_TOKEN or huggingface_hub's login) is for huggingface.co: sent to every
# configured mirror, the one-click public mirror included, it leaked to a third party (issue 22
# note). The app passes the hosts its user approved as ``token_hosts`` instead.


def resolve_token(
    token: str | None = None, *, where: str | None = None, token_hosts: Collection[str] = ()
) -> str | None:
    """The token to attach to a request to ``where`` (an endpoint or URL; None: the endpoint
    in use): ``token`` (the caller's), else $HF_TOKEN or huggingface_hub's stored login; and
    only when ``where`` is huggingface.co or an approved mirror (`token_allowed`). None:
    anonymous."""
    if not token_allowed(where, token_hosts):
        return None
    if token:
        return token
    from huggingface_hub import get_token

    return get_token()


def token_allowed(where: str | None = None, token_hosts: Collection[str] = ()) -> bool:
    """Whether the Hub token may go to ``where`` (an endpoint or a URL): huggingface.co, an
    origin in ``token_hosts`` (the mirrors the user approved) or in $HEARTH_TOKEN_MIRRORS."""
    allowed = [DEFAULT_ENDPOINT, *token_hosts, *settings.TOKEN_MIRRORS.text().split(",")]
    return origin_of(where or resolve_endpoint()) in {origin_of(a) for a in allowed if a.strip()}


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased (the unit a token is approved for)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def hub_api(
    *, token: str | None = None, endpoint: str | None = None, token_hosts: Collection[str] = ()
) -> Any:
    """A huggingface_hub `HfApi` for this endpoint, with the token where it may go."""
    from huggingface_hub import HfApi

    where = resolve_endpoint(endpoint)
    check_resolves(where)  # offline: fail in milliseconds, not after five retries
    return HfApi(
        endpoint=where, token=resolve_token(token, where=where, token_hosts=token_hosts) or False
    )


def file_url(repo_id: str, filename: str, *, endpoint: str | None = None) -> str:
    """The ``resolve/main`` URL of a file in a model repo."""
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo_id, filename, endpoint=resolve_endpoint(endpoint))


def hub_headers(
    token: str | None = None,
    *,
    send_token: bool = True,
    where: str | None = None,
    token_hosts: Collection[str] = (),
) -> dict[str, str]:
    """huggingface_hub's request headers (user agent, Authorization when there is a token,
    ``send_token`` and `token_allowed` for ``where``). Redirects to another origin drop the
    Authorization header (httpx does, except for an http -> https upgrade of one host)."""
    from huggingface_hub.utils import build_hf_headers

    chosen = resolve_token(token, where=where, token_hosts=token_hosts) if send_token else None
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
