"""Reading a GGUF header over HTTP range requests (fake Hub on 127.0.0.1), and the local
header summary: the same answers, a small fraction of the bytes, clear errors for files that
are not GGUF or whose header is cut short."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import pytest

from engine.errors import CorruptModelError, NotGGUFError, RemoteFileNotFoundError
from engine.hub.remote_header import summarize_url
from engine.hub.summary import summarize_file
from engine.hub.transport import file_url
from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import write_tiny_gguf

REPO = "tester/Wide-GGUF"
BIG = "wide-F32.gguf"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # see test_hub_download


@pytest.fixture(scope="module")
def wide_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A qwen2 GGUF with the bundled 49k-token vocabulary in its header (~1 MB, as real ones)
    and float32 weights of ~50 MB: header small next to the tensor data, as in real models."""
    from bench.synth.configs import tiny_config
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("wide") / BIG
    write_tiny_model(
        path, "qwen2", "F32", tiny_config("qwen2", hidden_size=256, intermediate_size=512)
    )
    return path


@pytest.fixture
def hub(wide_gguf: Path) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        fake.add(REPO, BIG, wide_gguf.read_bytes())
        yield fake


def test_remote_header_reads_under_10_percent(hub: FakeHub, wide_gguf: Path) -> None:
    url = file_url(REPO, BIG, endpoint=hub.endpoint)
    remote = summarize_url(url)
    local = summarize_file(wide_gguf)
    size = wide_gguf.stat().st_size
    print(f"header read: {hub.body_bytes[BIG]} of {size} bytes")
    assert hub.body_bytes[BIG] < 0.10 * size
    assert all(r.range and r.range.startswith("bytes=") for r in hub.requests if r.server == "cdn")
    assert (remote.architecture, remote.quantization, remote.parameters) == (
        local.architecture,
        local.quantization,
        local.parameters,
    )
    assert (remote.context_length, remote.ram_estimate_bytes, remote.fast_path) == (
        local.context_length,
        local.ram_estimate_bytes,
        local.fast_path,
    )
    assert remote.size_bytes == size and remote.path == url and remote.source == "hub"
    assert local.architecture == "qwen2" and local.quantization == "F32"
    assert local.parameters > 12_000_000 and local.fast_path


def test_remote_not_gguf_and_truncated_and_missing(hub: FakeHub, wide_gguf: Path) -> None:
    hub.add(REPO, "page.gguf", b"<!doctype html>" * 1000)
    with pytest.raises(NotGGUFError, match="not a GGUF"):
        summarize_url(file_url(REPO, "page.gguf", endpoint=hub.endpoint))
    hub.add(REPO, "cut.gguf", wide_gguf.read_bytes()[:300_000])  # inside the vocabulary
    with pytest.raises(CorruptModelError, match="truncated"):
        summarize_url(file_url(REPO, "cut.gguf", endpoint=hub.endpoint))
    with pytest.raises(RemoteFileNotFoundError, match="404"):
        summarize_url(file_url(REPO, "absent.gguf", endpoint=hub.endpoint))


def test_local_summary_errors(tmp_path: Path) -> None:
    good = write_tiny_gguf(tmp_path / "tiny.gguf")
    (tmp_path / "notes.gguf").write_text("these are my notes, not a model")
    with pytest.raises(NotGGUFError, match="not a GGUF"):
        summarize_file(tmp_path / "notes.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(CorruptModelError, match="truncated"):
        summarize_file(cut)


def test_local_summary_is_cached_and_follows_changes(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    first = summarize_file(path)
    assert first.architecture == "llama" and first.quantization == "Q4_1"
    cache = Path(tmp_path / "cache" / "hub" / "summaries.json")
    assert str(path.resolve()) in cache.read_text(encoding="utf-8")
    assert summarize_file(path) == first  # from the cache (same path, size, mtime)
    write_tiny_gguf(path, matrix_type="Q8_0")  # the file changes: read again
    assert summarize_file(path).quantization == "Q8_0"


def test_the_token_goes_to_the_hub_only(hub: FakeHub) -> None:
    spec = hub.repos[REPO][BIG]
    url = file_url(REPO, BIG, endpoint=hub.endpoint)
    hub.requests.clear()
    summarize_url(url, token="hf_secret", endpoint=hub.endpoint)  # a mirror nobody approved
    assert not any(r.authorization for r in hub.requests)
    approved = [hub.endpoint]
    summarize_url(url, token="hf_secret", endpoint=hub.endpoint, token_hosts=approved)
    assert any(r.authorization for r in hub.requests if r.server == "hub")
    summarize_url(
        f"{hub.cdn}/blobs/{spec.sha256}?name={BIG}",
        token="hf_secret",
        endpoint=hub.endpoint,
        token_hosts=approved,
    )  # another server: no token
    assert not any(r.authorization for r in hub.requests if r.server == "cdn")
