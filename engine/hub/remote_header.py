"""A GGUF header read over HTTP by range requests alone: judge a model before downloading it.

Owns fetching a remote file's header in growing ranges (64 KiB, then doubling; each request
asks only for the bytes not yet held), parsing it with the engine's header parser over the
bytes held so far, and summarising it (`summarize_url`). A GGUF header is a few MB at most (the
vocabulary) against GBs of weights, so this reads well under 10% of any real model.
Does not own the parser (`engine.gguf.header`) or the summary (`engine.hub.summary`).
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import unquote, urlparse

from engine.errors import CorruptModelError, HubError, NotGGUFError
from engine.gguf.header import GGUF_MAGIC, GgufSummary
from engine.gguf.header import _Cursor as _FileCursor  # the parser's cursor, reused over bytes
from engine.gguf.header import _parse as _parse_header
from engine.hub import transport
from engine.hub.summary import ModelSummary, summarize_header

FIRST_RANGE = 64 * 1024
MAX_HEADER = 256 * 2**20  # no real header comes near this: stop instead of reading the file


class _NeedMore(Exception):
    """The bytes held so far end inside the header."""


class _PrefixCursor(_FileCursor):
    """The header parser's cursor over a prefix of the file: running off the end of the
    prefix asks for more bytes instead of calling the file truncated."""

    def read(self, fmt: str) -> int | float | bool:
        try:
            return super().read(fmt)
        except CorruptModelError:
            raise _NeedMore from None

    def skip_string(self) -> int:
        try:
            return super().skip_string()
        except CorruptModelError:
            raise _NeedMore from None

    def skip_strings(self, count: int) -> None:
        try:
            super().skip_strings(count)
        except CorruptModelError:
            raise _NeedMore from None


def _cursor(prefix: bytes, url: str) -> Any:
    """The parser reads a buffer by slicing and `struct.unpack_from`: bytes serve as well as
    the memory map it was written for; ``url`` only appears in its messages."""
    return _PrefixCursor(cast(Any, prefix), cast(Any, url))


def summarize_url(
    url: str, *, token: str | None = None, endpoint: str | None = None
) -> ModelSummary:
    """Describe the GGUF at ``url`` (a Hub ``resolve/`` URL or any HTTP server that honours
    Range) from its header alone."""
    header, size = read_remote_header(url, token=token, endpoint=endpoint)
    name = unquote(urlparse(url).path.rsplit("/", 1)[-1]).removesuffix(".gguf")
    return summarize_header(header, path=url, size_bytes=size, fallback_name=name, source="hub")


def read_remote_header(
    url: str, *, token: str | None = None, endpoint: str | None = None
) -> tuple[GgufSummary, int]:
    """(the parsed header, the file's size) of the GGUF at ``url``. The token goes only to
    the Hub or the mirror in ``endpoint``/HF_ENDPOINT, never to another server."""
    with transport.hub_errors(what=url, endpoint=endpoint):
        send_token = transport.is_hub_url(url, endpoint=endpoint)
        fetcher = _RangeFetcher(url, transport.hub_headers(token, send_token=send_token))
        prefix = fetcher.fetch(0, FIRST_RANGE)
        if prefix[:4] != GGUF_MAGIC:
            raise NotGGUFError(f"{url} is not a GGUF model file (it does not start with 'GGUF')")
        while True:
            try:
                return _parse_header(
                    _cursor(prefix, url), cast(Any, url), fetcher.size
                ), fetcher.size
            except _NeedMore:
                if len(prefix) >= fetcher.size or len(prefix) >= MAX_HEADER:
                    raise CorruptModelError(
                        f"{url} is truncated: its GGUF header ends early "
                        f"(the file has {fetcher.size} bytes)"
                    ) from None
                prefix += fetcher.fetch(len(prefix), len(prefix))  # double what is held


class _RangeFetcher:
    """GET with Range on one URL; learns the file's size from Content-Range."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url, self.headers = url, headers
        self.size = 0

    def fetch(self, start: int, length: int) -> bytes:
        end = start + length - 1 if not self.size else min(start + length, self.size) - 1
        headers = {**self.headers, "Range": f"bytes={start}-{end}"}
        client = transport.session()
        with client.stream(
            "GET", self.url, headers=headers, follow_redirects=True, timeout=transport.timeout()
        ) as response:
            if response.status_code >= 400:
                response.read()
                transport.raise_for_status(response)
            if response.status_code != 206:  # never read a whole model to get its header
                raise HubError(
                    f"{self.url} does not answer range requests (HTTP {response.status_code}); "
                    "its header cannot be read without downloading the whole file"
                )
            self.size = _total_size(response) or self.size
            return bytes(response.read())


def _total_size(response: object) -> int:
    """The total in ``Content-Range: bytes a-b/total`` (0 when absent or "*")."""
    total = getattr(response, "headers", {}).get("Content-Range", "").rpartition("/")[2]
    return int(total) if total.isdigit() else 0
