"""Who may talk to Hearth's local server, and which request heads it reads a body for.

Owns the checks a request passes before the server reads its body or touches the engine: the
bind policy (loopback unless ``allow_remote`` and a key), the ``Host`` check that defeats DNS
rebinding, the ``Origin`` check that refuses web pages, the API key, the JSON content type (a
``text/plain`` POST is a CORS "simple request" any page may send without asking), and a
strict ``Content-Length``; and the bytes that answer a connection past the server's cap.
Each refusal is a `ApiError` with an OpenAI-style body. Pure functions over the parsed
headers: no sockets, no threads (`engine.serve.server`).

Why a key-less loopback server needs this: any web page the user opens can POST to
``http://127.0.0.1:PORT``, and a DNS-rebinding page (its own name re-pointed at 127.0.0.1)
can also read the replies. Browsers always send ``Host`` and, on a POST or a cross-origin
fetch, ``Origin``; command-line clients and SDKs send no ``Origin``.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from collections.abc import Sequence
from email.message import Message
from urllib.parse import urlsplit

from engine.errors import InvalidParamsError
from engine.serve.api_error import ApiError
from engine.types import Message as EngineMessage

_DIGITS = re.compile(r"[0-9]{1,20}")  # ASCII only: str.isdigit() accepts "²", int() does not


# The whole reply to a connection past the server's cap, sent before reading anything.
_BUSY = ApiError(503, "the server is at its connection limit; retry shortly", code="server_busy")
_BUSY_BODY = json.dumps(_BUSY.body()).encode()
BUSY_REPLY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_BUSY_BODY)}\r\n".encode()
    + b"Retry-After: 1\r\nConnection: close\r\n\r\n"
    + _BUSY_BODY
)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_key: str | None, allow_remote: bool) -> None:
    """Refuse a non-loopback bind unless explicitly allowed AND protected by a key."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise InvalidParamsError(
            f"binding {host} would expose the model to the network; pass --allow-remote "
            "(and --api-key) to do that on purpose, or use 127.0.0.1"
        )
    if not api_key:
        raise InvalidParamsError(f"binding {host} needs an API key (--api-key or HEARTH_API_KEY)")


def check_caller(headers: Message, allow_remote: bool) -> None:
    """Refuse a request addressed to a non-loopback name, or sent by a web page elsewhere."""
    host = _single(headers, "Host")
    if not allow_remote and host is not None and not is_loopback(_hostname(host)):
        raise ApiError(
            403,
            f"this server answers only requests addressed to localhost or 127.0.0.1, not "
            f"{host[:100]!r} (start it with --allow-remote to serve other names)",
            code="forbidden_host",
        )
    origin = _single(headers, "Origin")
    if origin is None or _origin_allowed(origin, host, allow_remote):
        return
    raise ApiError(
        403,
        f"requests from web pages at {origin[:100]!r} are refused: only programs on this "
        "computer (or pages served from localhost) may use this server",
        code="forbidden_origin",
    )


def check_key(headers: Message, api_key: str | None) -> None:
    if api_key is None:
        return
    given = headers.get("Authorization", "")
    token = given[7:] if given.lower().startswith("bearer ") else ""
    if not hmac.compare_digest(token.encode(), api_key.encode()):
        raise ApiError(
            401,
            "missing or incorrect API key (send Authorization: Bearer KEY)",
            code="invalid_api_key",
        )


def check_json_body(headers: Message, max_bytes: int) -> int:
    """The length of a JSON body the server may read; refuse anything else."""
    kind = _single(headers, "Content-Type") or ""
    if kind.split(";", 1)[0].strip().lower() != "application/json":
        raise ApiError(
            415,
            f"the request body must be JSON, sent with Content-Type: application/json "
            f"(got {kind[:100]!r})",
            code="unsupported_media_type",
        )
    if headers.get("Transfer-Encoding") is not None:
        raise ApiError(400, "chunked request bodies are not supported: send a Content-Length")
    length = _single(headers, "Content-Length")
    if length is None or not _DIGITS.fullmatch(length.strip()):
        raise ApiError(400, "the request needs one Content-Length header holding a number")
    size = int(length.strip())
    if size > max_bytes:
        raise ApiError(413, f"the request body is over {max_bytes} bytes")
    return size


# No vocabulary has tokens longer than this many characters on average over a whole prompt
# (English averages ~4): a prompt longer than context x this cannot fit, whatever it says.
MAX_CHARS_PER_TOKEN = 32


def check_prompt_size(messages: Sequence[EngineMessage], context_window: int) -> None:
    """Refuse, before tokenizing it, a prompt too long for the context by its size alone
    (tokenizing an 8 MB prompt took 5-6 s and 0.7 GB only to refuse it)."""
    chars = sum(len(m.content) + len(m.reasoning) for m in messages)
    limit = context_window * MAX_CHARS_PER_TOKEN
    if context_window > 0 and chars > limit:
        raise ApiError(
            400,
            f"the prompt has {chars:,} characters, more than a {context_window}-token context "
            f"can hold (at most {limit:,}); shorten it",
            param="messages",
            code="context_length_exceeded",
        )


def _single(headers: Message, name: str) -> str | None:
    """The header's one value; two copies (which may disagree) are a bad request."""
    values = headers.get_all(name) or []
    if len(values) > 1:
        raise ApiError(400, f"the request has {len(values)} {name} headers; send one")
    return str(values[0]) if values else None


def _hostname(authority: str) -> str:
    """``host`` of ``host[:port]`` or ``[v6]:port``."""
    authority = authority.strip()
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    if authority.count(":") == 1:
        return authority.split(":", 1)[0]
    return authority


def _origin_allowed(origin: str, host: str | None, allow_remote: bool) -> bool:
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not name:
        return False  # "null" (file://, sandboxed frames) and other schemes
    if is_loopback(name):
        return True
    # A served-on-purpose remote server may be used by its own pages (same origin).
    return allow_remote and host is not None and parts.netloc.lower() == host.strip().lower()
