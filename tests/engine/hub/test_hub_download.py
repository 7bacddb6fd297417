"""Downloads against a local fake Hub: resume after a cut, sha256 refusal, cancel and resume
after a restart, and the errors a user can meet (offline, unknown repo, gated, 404, disk full,
not a GGUF) — each leaving nothing half-done behind."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import pytest

from engine.errors import (
    ChecksumMismatchError,
    DiskFullError,
    DownloadCancelled,
    GatedRepoError,
    HubError,
    HubOfflineError,
    NotGGUFError,
    RemoteFileNotFoundError,
    RepoNotFoundError,
)
from engine.hub.download import PARTIAL_DIR, download, pending_downloads
from engine.hub.search import HubFile, list_gguf_files, match_quant
from tests.engine.support.fake_hub import FakeHub, free_port
from tests.engine.support.tiny_gguf import write_tiny_gguf

REPO = "tester/Tiny-GGUF"
NAME = "tiny-Q4_1.gguf"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    # tests/conftest.py sets HF_HUB_OFFLINE=1 before huggingface_hub reads it at import; these
    # tests talk to a server on 127.0.0.1 only, so they switch its offline flag back off.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture(scope="module")
def tiny_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / NAME).read_bytes()


@pytest.fixture
def hub(tiny_bytes: bytes) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        fake.add(REPO, NAME, tiny_bytes)
        yield fake


def _file(hub: FakeHub, repo: str = REPO, name: str = NAME) -> HubFile:
    return match_quant(list_gguf_files(repo, endpoint=hub.endpoint), name.split("-")[-1][:-5])


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_download_verifies_and_moves_into_place(hub: FakeHub, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    path = download(
        _file(hub),
        dest_dir=tmp_path / "models",
        endpoint=hub.endpoint,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert path == tmp_path / "models" / NAME
    assert path.read_bytes() == hub.repos[REPO][NAME].data
    assert seen[-1] == (len(path.read_bytes()),) * 2
    assert _leftovers(tmp_path / "models") == [NAME]  # no .part, no sidecar


def test_cut_at_40_percent_resumes_not_restarts(hub: FakeHub, tmp_path: Path) -> None:
    size = len(hub.repos[REPO][NAME].data)
    cut = size * 40 // 100
    hub.cut_after[NAME] = cut
    path = download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert path.read_bytes() == hub.repos[REPO][NAME].data
    assert hub.ranges(NAME) == [None, f"bytes={cut}-"]  # the second GET starts at the cut
    assert hub.body_bytes[NAME] < 1.6 * size


def test_cancel_then_resume_after_restart(hub: FakeHub, tmp_path: Path) -> None:
    cancel = threading.Event()
    size = len(hub.repos[REPO][NAME].data)
    hub.cut_after[NAME] = size // 2  # two transfers, so the cancel lands between them

    def progress(done: int, total: int) -> None:
        if done >= total * 40 // 100:
            cancel.set()

    with pytest.raises(DownloadCancelled, match="resumes"):
        download(
            _file(hub), dest_dir=tmp_path, endpoint=hub.endpoint, progress=progress, cancel=cancel
        )
    assert not (tmp_path / NAME).exists()
    (pending,) = pending_downloads(tmp_path)  # what a restarted app offers
    assert pending.file.filename == NAME and 0 < pending.downloaded < size
    held = pending.downloaded
    path = download(pending.file, dest_dir=tmp_path, endpoint=pending.endpoint)
    assert path.read_bytes() == hub.repos[REPO][NAME].data
    assert hub.ranges(NAME)[-1] == f"bytes={held}-"
    assert pending_downloads(tmp_path) == []


def test_corrupted_body_is_refused_and_deleted(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos[REPO][NAME].corrupt = True
    with pytest.raises(ChecksumMismatchError, match="failed its sha256 check"):
        download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == []


def test_a_changed_remote_file_discards_the_old_partial(hub: FakeHub, tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DownloadCancelled):
        download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint, cancel=cancel)
    spec = hub.repos[REPO][NAME]
    spec.data = spec.data[:-64] + bytes(64)  # a new upload under the same name
    path = download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert path.read_bytes() == spec.data
    assert hub.ranges(NAME)[-1] is None  # started from byte 0


def test_offline_is_a_clear_error(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(HubOfflineError, match="cannot reach"):
        list_gguf_files(REPO, endpoint=endpoint)
    file = HubFile(REPO, NAME, 100, "0" * 64, "Q4_1")
    with pytest.raises(HubOfflineError, match="HF_ENDPOINT"):
        download(file, dest_dir=tmp_path, endpoint=endpoint)
    assert _leftovers(tmp_path) == []


def test_unknown_repo_and_missing_file(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(RepoNotFoundError, match="not found"):
        list_gguf_files("nobody/Nothing-GGUF", endpoint=hub.endpoint)
    missing = HubFile(REPO, "gone-Q8_0.gguf", 10, "0" * 64, "Q8_0")
    with pytest.raises(RemoteFileNotFoundError, match="404"):
        download(missing, dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == []


def test_gated_repo_without_token(hub: FakeHub, tmp_path: Path) -> None:
    hub.gated.add(REPO)
    with pytest.raises(GatedRepoError, match="HF_TOKEN"):
        download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == []
    # The fake Hub is a mirror (127.0.0.1): the app's saved token goes there only once the
    # user approved that host for it, and never on to the CDN the mirror redirects to.
    with pytest.raises(GatedRepoError):
        download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint, token="hf_test")
    assert not any(r.authorization for r in hub.requests)
    path = download(
        _file(hub),
        dest_dir=tmp_path,
        endpoint=hub.endpoint,
        token="hf_test",
        token_hosts=[f"{hub.endpoint}/"],
    )
    assert path.is_file()  # with a token the fake Hub lets it through
    assert any(r.authorization for r in hub.requests if r.server == "hub")
    assert not any(r.authorization for r in hub.requests if r.server == "cdn")  # token stays


def test_the_saved_token_goes_to_approved_mirrors_only(hub: FakeHub) -> None:
    """Listing a repo (huggingface_hub's HfApi) carries the token to an approved mirror only;
    approving another host (here the CDN's port) does not approve this one."""
    hub.requests.clear()
    list_gguf_files(REPO, endpoint=hub.endpoint, token="hf_test", token_hosts=[hub.cdn])
    assert hub.requests and not any(r.authorization for r in hub.requests)
    hub.requests.clear()
    list_gguf_files(REPO, endpoint=hub.endpoint, token="hf_test", token_hosts=[hub.endpoint])
    assert hub.requests and all(r.authorization for r in hub.requests)


def test_hf_token_from_the_environment(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.gated.add(REPO)
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    # The fake Hub is a mirror to the engine: the ambient token goes there once allowed.
    monkeypatch.setenv("HEARTH_TOKEN_MIRRORS", hub.endpoint)
    assert download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint).is_file()


def test_a_finished_file_is_not_downloaded_again(hub: FakeHub, tmp_path: Path) -> None:
    first = download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    served = hub.body_bytes[NAME]
    assert download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint) == first
    assert hub.body_bytes[NAME] == served


def test_disk_full_is_checked_before_writing(
    hub: FakeHub, tiny_bytes: bytes, tmp_path: Path
) -> None:
    # A real check: no disk here has 10 PB free.
    hub.add(REPO, "huge-Q8_0.gguf", tiny_bytes, advertised_size=10**16)
    with pytest.raises(DiskFullError, match="not enough disk space"):
        download(_file(hub, name="huge-Q8_0.gguf"), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == []


def test_not_gguf_is_refused_at_the_first_bytes(hub: FakeHub, tmp_path: Path) -> None:
    hub.add(REPO, "fake-Q2_K.gguf", b"<html>not a model</html>" * 100)
    with pytest.raises(NotGGUFError, match="not a GGUF"):
        download(_file(hub, name="fake-Q2_K.gguf"), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / PARTIAL_DIR / "fake-Q2_K.gguf.part").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_disk_filling_up_mid_download_leaves_nothing(hub: FakeHub, tmp_path: Path) -> None:
    # A real ENOSPC: the partial file is a link to /dev/full, which refuses every write.
    file = _file(hub)
    partial = tmp_path / PARTIAL_DIR
    partial.mkdir()
    (partial / f"{NAME}.part").symlink_to("/dev/full")
    sidecar = {
        "repo_id": REPO,
        "filename": NAME,
        "size": file.size_bytes,
        "sha256": file.sha256,
        "endpoint": hub.endpoint,
    }
    (partial / f"{NAME}.part.json").write_text(json.dumps(sidecar))
    with pytest.raises(DiskFullError, match="disk filled up"):
        download(file, dest_dir=tmp_path, endpoint=hub.endpoint)
    assert _leftovers(tmp_path) == [] and not (partial / f"{NAME}.part").is_symlink()


def test_one_transfer_of_a_file_at_a_time(hub: FakeHub, tmp_path: Path) -> None:
    from engine.hub.file_lock import FileLock

    lock = tmp_path / PARTIAL_DIR / f"{NAME}.part.lock"
    lock.parent.mkdir()
    holder = FileLock(lock)  # another transfer holding the OS lock, as a second thread would
    assert holder.try_acquire()
    with pytest.raises(HubError, match="already being downloaded"):
        download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert lock.exists() and not (tmp_path / NAME).exists()
    holder.release()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lock.write_text(dead)  # a file left by a process that died holds no OS lock: no obstacle
    assert download(_file(hub), dest_dir=tmp_path, endpoint=hub.endpoint).is_file()
    assert not lock.exists()


def test_a_body_shorter_than_announced_ends_with_an_error(
    hub: FakeHub, tiny_bytes: bytes, tmp_path: Path
) -> None:
    # The Hub announces more bytes than the CDN ever sends: retries stop, nothing is moved.
    hub.add(REPO, "short-Q5_0.gguf", tiny_bytes, advertised_size=len(tiny_bytes) + 1000)
    with pytest.raises(HubOfflineError, match="resumes from there"):
        download(_file(hub, name="short-Q5_0.gguf"), dest_dir=tmp_path, endpoint=hub.endpoint)
    assert not (tmp_path / "short-Q5_0.gguf").exists()
