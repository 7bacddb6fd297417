"""Hostile servers and repo listings against the hub (issue 22 A2, A3, A5, A19, A20): real HTTP
on 127.0.0.1 (`tests.engine.support.hostile_http`), tiny bodies that still prove each bound."""

from __future__ import annotations

import hashlib

import pytest

from engine.errors import CorruptModelError, HubError, HubOfflineError
from engine.hub.download import download, pending_downloads
from engine.hub.names import MAX_NAME_BYTES, local_name
from engine.hub.remote_header import _RangeFetcher, read_remote_header
from engine.hub.search import HubFile, list_gguf_files, match_quant
from tests.engine.support.fake_hub import FakeHub, HubFileSpec
from tests.engine.support.hostile_http import HostileServer
from tests.engine.support.tiny_gguf import write_tiny_gguf

MB = 2**20


@pytest.fixture(autouse=True)
def _online_to_localhost(tmp_path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token
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


# --- pull: the announced size and stalls (A3, A19) ---------------------------------------------

REPO = "tester/Hostile-GGUF"
NAME = "tiny-Q4_1.gguf"


class _Overlong(HubFileSpec):
    """Serves ``data`` but announces (size and sha256) only its first ``advertised_size``
    bytes: a server that keeps sending past the end of the file."""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data[: self.size]).hexdigest()


@pytest.fixture(scope="module")
def tiny_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / NAME).read_bytes()


def _hub_file(hub: FakeHub) -> HubFile:
    return match_quant(list_gguf_files(REPO, endpoint=hub.endpoint), "Q4_1")


def test_pull_stops_at_the_announced_size(tiny_bytes: bytes, tmp_path) -> None:
    """A3: 8 MB of junk after a file announced as its true size are never written, and the
    progress never reports more held than the total."""
    seen: list[tuple[int, int]] = []
    with FakeHub() as hub:
        hub.repos[REPO] = {
            NAME: _Overlong(tiny_bytes + bytes(8 * MB), advertised_size=len(tiny_bytes))
        }
        path = download(
            _hub_file(hub),
            dest_dir=tmp_path / "models",
            endpoint=hub.endpoint,
            progress=lambda d, t: seen.append((d, t)),
        )
    assert path.read_bytes() == tiny_bytes
    assert all(done <= total for done, total in seen), max(seen)


def test_a_stalled_pull_stops_with_a_clear_message_and_resumes(
    tiny_bytes: bytes, tmp_path, monkeypatch
) -> None:
    """A19: a server sending one byte per pause never trips a read timeout; the stall watch
    stops it (window shrunk for the test), the partial stays, and a second pull completes."""
    from engine.hub import download as downloading

    monkeypatch.setattr(downloading, "STALL_WINDOW_S", 0.3)
    monkeypatch.setattr(downloading, "STALL_MIN_BYTES", 1024)
    with FakeHub() as hub:
        hub.add(REPO, NAME, tiny_bytes)
        hub.trickle_after[NAME] = (len(tiny_bytes) // 2, 0.05)
        with pytest.raises(HubOfflineError, match="stalled"):
            download(_hub_file(hub), dest_dir=tmp_path / "models", endpoint=hub.endpoint)
        (pending,) = pending_downloads(tmp_path / "models")
        assert pending.downloaded >= len(tiny_bytes) // 2
        path = download(_hub_file(hub), dest_dir=tmp_path / "models", endpoint=hub.endpoint)
    assert path.read_bytes() == tiny_bytes


# --- file names from the repo listing (A5) ---------------------------------------------------


@pytest.mark.parametrize(
    ("listed", "saved"),
    [
        ("..\\..\\..\\EVIL.Q4_0.gguf", "EVIL.Q4_0.gguf"),
        ("../../EVIL.Q4_0.gguf", "EVIL.Q4_0.gguf"),
        ("sub/dir/model\x00.Q4_0.gguf", "model_.Q4_0.gguf"),
        ('a<b>:c"d|e?f*.gguf', "a_b__c_d_e_f_.gguf"),
        ("CON.gguf", "_CON.gguf"),
        ("..gguf.gguf", "gguf.gguf"),
    ],
)
def test_listed_names_become_safe_local_names(listed: str, saved: str) -> None:
    assert local_name(listed) == saved


def test_an_overlong_name_is_shortened_keeping_its_suffix() -> None:
    name = local_name("é" * 300 + ".Q4_0.gguf")
    assert name.endswith(".gguf") and len(name.encode()) <= MAX_NAME_BYTES
    name.encode().decode("utf-8")  # never cut inside a character


@pytest.mark.parametrize("listed", ["..", "..\\..\\", "evil.sh", "\x00"])
def test_a_name_with_nothing_usable_is_refused(listed: str) -> None:
    with pytest.raises(HubError, match="will not save"):
        local_name(listed)


def test_a_pulled_file_with_a_300_byte_name_lands_in_the_folder(tiny_bytes, tmp_path) -> None:
    long_name = "m" * 300 + "-Q4_1.gguf"
    with FakeHub() as hub:
        hub.add(REPO, long_name, tiny_bytes)
        path = download(_hub_file(hub), dest_dir=tmp_path / "models", endpoint=hub.endpoint)
    assert path.parent == tmp_path / "models" and path.read_bytes() == tiny_bytes
    assert len(path.name.encode()) <= MAX_NAME_BYTES


# --- the download lock (A10) -------------------------------------------------------------------


def _contend_for_the_lock(folder, spec, rounds, barrier, holders, peak) -> None:
    import time

    from engine.hub.partial import Partial

    for _ in range(rounds):
        job = Partial(folder, spec, 10, "0" * 64, "http://x")
        barrier.wait()
        try:
            job.lock()
        except HubError:
            continue
        with holders.get_lock():
            holders.value += 1
            peak.value = max(peak.value, holders.value)
        time.sleep(0.001)  # hold it a moment, as a transfer would
        with holders.get_lock():
            holders.value -= 1
        job.unlock()


def test_the_download_lock_is_never_held_twice(tmp_path) -> None:
    """A10: 6 processes race for the lock of one file, 60 rounds: at most one holds it at any
    time (the pid file let two in: 1-181 of 200 rounds), and the lock file is gone after."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    spec = HubFile(REPO, NAME, 10, "0" * 64, "Q4_1")
    holders, peak = ctx.Value("i", 0), ctx.Value("i", 0)
    barrier = ctx.Barrier(6)
    args = (tmp_path, spec, 60, barrier, holders, peak)
    procs = [ctx.Process(target=_contend_for_the_lock, args=args) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert peak.value == 1
    assert not list((tmp_path / ".partial").glob("*.lock"))


# --- the ambient Hub token stays with the Hub (design note) ------------------------------------


def test_the_ambient_token_goes_to_a_mirror_only_when_allowed(
    tiny_bytes: bytes, tmp_path, monkeypatch
) -> None:
    """$HF_TOKEN is the user's huggingface.co login: a mirror (here the fake Hub on 127.0.0.1,
    as the one-click public mirror would be) gets it only when listed in
    $HEARTH_TOKEN_MIRRORS (the app's saved token: test_hub_download)."""
    monkeypatch.setenv("HF_TOKEN", "hf_ambient_secret")
    monkeypatch.delenv("HEARTH_TOKEN_MIRRORS", raising=False)
    with FakeHub() as hub:
        hub.add(REPO, NAME, tiny_bytes)
        download(_hub_file(hub), dest_dir=tmp_path / "a", endpoint=hub.endpoint)
        assert not any(r.authorization for r in hub.requests)
        monkeypatch.setenv("HEARTH_TOKEN_MIRRORS", f"https://other.example, {hub.endpoint}/")
        hub.requests.clear()
        download(_hub_file(hub), dest_dir=tmp_path / "b", endpoint=hub.endpoint)
        assert any(r.authorization for r in hub.requests if r.server == "hub")
        assert not any(r.authorization for r in hub.requests if r.server == "cdn")
