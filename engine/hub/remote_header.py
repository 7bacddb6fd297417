"""A GGUF header read over HTTP by range requests alone: judge a model before downloading it.

Owns fetching a remote file's header in growing ranges (64 KiB, then doubling; each request
asks only for the bytes not yet held), parsing it with the engine's one GGUF parser over the
bytes held so far, and summarising it (`summarize_url`). A GGUF header is a few MB at most (the
vocabulary) against GBs of weights, so this reads well under 10% of any real model.
Does not own the parser (`engine.gguf.reader`) or the summary (`engine.hub.summary`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from urllib.parse import unquote, urlparse

from engine.errors import CorruptModelError, HubError, NotGGUFError
from engine.gguf.header import GgufSummary, summarize
from engine.gguf.reader import GGUF_MAGIC, HeaderParser
from engine.hub import transport
from engine.hub.summary import ModelSummary, summarize_header

FIRST_RANGE = 64 * 1024
# The largest real headers (262k-token vocabularies with scores and types) are ~10 MB: past
# this cap a header is hostile or not a header, and reading on would fetch the whole file.
MAX_HEADER = 32 * 2**20


class _NeedMore(Exception):
    """The bytes held so far end inside the header."""


class _PrefixParser(HeaderParser):
    """The GGUF parser over a prefix of the file: running off the end of the prefix asks for
    more bytes instead of calling the file truncated."""

    def ends_early(self) -> Exception:
        return _NeedMore()


def summarize_url(
    url: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    token_hosts: Collection[str] = (),
) -> ModelSummary:
    """Describe the GGUF at ``url`` (a Hub ``resolve/`` URL or any HTTP server that honours
    Range) from its header alone."""
    header, size = read_remote_header(url, token=token, endpoint=endpoint, token_hosts=token_hosts)
    name = unquote(urlparse(url).path.rsplit("/", 1)[-1]).removesuffix(".gguf")
    return summarize_header(header, path=url, size_bytes=size, fallback_name=name, source="hub")


def read_remote_header(
    url: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    token_hosts: Collection[str] = (),
) -> tuple[GgufSummary, int]:
    """(the parsed header, the file's size) of the GGUF at ``url``. The token goes only to
    huggingface.co or a mirror approved for it (``token_hosts``), and of those only to the one
    in ``endpoint``/HF_ENDPOINT, never to another server."""
    with transport.hub_errors(what=url, endpoint=endpoint):
        send_token = transport.is_hub_url(url, endpoint=endpoint)
        headers = transport.hub_headers(
            token, send_token=send_token, where=url, token_hosts=token_hosts
        )
        fetcher = _RangeFetcher(url, headers)
        prefix = fetcher.fetch(0, FIRST_RANGE)
        if prefix[:4] != GGUF_MAGIC:
            raise NotGGUFError(f"{url} is not a GGUF model file (it does not start with 'GGUF')")
        while True:
            try:
                parsed = _PrefixParser(prefix, url, file_size=fetcher.size, arrays=False).parse()
                summary = summarize(parsed)
                parsed.close()
                return summary, fetcher.size
            except _NeedMore:
                if len(prefix) >= MAX_HEADER:
                    raise CorruptModelError(
                        f"{url}: its GGUF header runs past {MAX_HEADER // 2**20} MB, "
                        "far beyond any real model's; not reading further"
                    ) from None
                if len(prefix) >= fetcher.size:
                    raise CorruptModelError(
                        f"{url} is truncated: its GGUF header ends early "
                        f"(the file has {fetcher.size} bytes)"
                    ) from None
                more = min(len(prefix), MAX_HEADER - len(prefix))  # double what is held
                prefix += fetcher.fetch(len(prefix), more)


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
            if _range_start(response) != start:
                raise HubError(
                    f"{self.url} answered a range request with other bytes than asked "
                    f"(wanted bytes from {start}, got {_content_range(response) or 'no range'})"
                )
            self.size = _total_size(response) or self.size
            return _read_at_most(response, end - start + 1)


def _read_at_most(response: Any, length: int) -> bytes:
    """At most ``length`` body bytes: a server may send more than the range (or never stop),
    and what lies past the range is never the bytes asked for."""
    held = bytearray()
    for chunk in response.iter_bytes():
        held += chunk[: length - len(held)]
        if len(held) >= length:
            break
    return bytes(held)


def _content_range(response: object) -> str:
    return str(getattr(response, "headers", {}).get("Content-Range", ""))


def _range_start(response: object) -> int:
    """The first byte in ``Content-Range: bytes a-b/total`` (-1 when absent or malformed)."""
    first = _content_range(response).removeprefix("bytes ").partition("-")[0].strip()
    return int(first) if first.isdigit() else -1


def _total_size(response: object) -> int:
    """The total in ``Content-Range: bytes a-b/total`` (0 when absent or "*")."""
    total = _content_range(response).rpartition("/")[2]
    return int(total) if total.isdigit() else 0
