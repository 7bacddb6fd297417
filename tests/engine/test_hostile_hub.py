"""Hostile servers and repo listings against the hub (issue 22 A2, A3, A5, A19, A20): real HTTP
on 127.0.0.1 (`tests.engine.hostile_http`), tiny bodies that still prove each bound."""

from __future__ import annotations

import pytest

from engine.errors import CorruptModelError
from engine.hub.remote_header import _RangeFetcher, read_remote_header
from tests.engine.hostile_http import HostileServer

MB = 2**20


@pytest.fixture(autouse=True)
def _online_to_localhost(tmp_path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def test_a_206_body_is_read_only_as_far_as_the_range_asked(tmp_path) -> None:
    """A2: a server answering 206 with a body far longer than the range (here 8 MB; endless in
    the attack) is read only up to the bytes asked for."""
    body = b"GGUF" + b"\xff" * (8 * MB)
    with HostileServer(body=body, ignore_range=True) as server:
        got = _RangeFetcher(f"{server.url}/m.gguf", {}).fetch(0, 65536)
    assert len(got) == 65536


def test_a_206_from_the_wrong_offset_is_refused(tmp_path) -> None:
    """A reply whose Content-Range does not start where we asked cannot be parsed as the bytes
    we asked for."""
    body = b"GGUF" + bytes(300_000)
    with HostileServer(body=body, ignore_range=True) as server:
        fetcher = _RangeFetcher(f"{server.url}/m.gguf", {})
        fetcher.fetch(0, 65536)
        with pytest.raises(Exception, match="range"):
            fetcher.fetch(65536, 65536)


def test_remote_header_reading_is_capped(tmp_path) -> None:
    """A20: a header claiming a 4 GB string makes the reader give up at its cap with a clear
    message, without fetching 4 GB (the body here stops at 40 MB)."""
    import struct

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    head += struct.pack("<Q", 4) + b"key." + struct.pack("<I", 8) + struct.pack("<Q", 2**32)
    body = head + bytes(40 * MB)
    with HostileServer(body=body) as server:
        with pytest.raises(CorruptModelError, match="header"):
            read_remote_header(f"{server.url}/m.gguf")
        assert server.sent <= 34 * MB
