"""The catalogue's Safety section (issue 33): Qwen3Guard-Gen guard models listed apart from the
chat models, downloaded and sha256-verified like any model into ``<models>/guards`` (never
listed as a chat model), found there by `downloaded_guards` and by ``--guard-model NAME``.
Real HTTP on 127.0.0.1 (the fake Hub), a real GGUF."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import pytest

from engine.cli.safety_flags import guard_path
from engine.errors import ChecksumMismatchError
from engine.hub.catalogue import load_catalogue
from engine.hub.guard_models import (
    download_guard_model,
    downloaded_guards,
    guards_dir,
    load_guard_models,
)
from engine.hub.library import list_models
from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import write_tiny_gguf


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        for seed, guard in enumerate(load_guard_models()):  # two files, two hashes
            data = write_tiny_gguf(tmp_path / f"g{seed}.gguf", arch="qwen3", seed=seed)
            fake.add(guard.repo_id, guard.filename, data.read_bytes())
        yield fake


def test_the_safety_section_lists_two_qwen3guard_models_apart_from_chat_models() -> None:
    guards = load_guard_models()
    assert [g.name for g in guards] == ["Qwen3Guard-Gen 0.6B", "Qwen3Guard-Gen 4B"]
    assert guards[0].repo_id == "QuantFactory/Qwen3Guard-Gen-0.6B-GGUF"
    assert all(g.architecture == "qwen3" and not g.checked_online for g in guards)
    assert all(g.filename.startswith(g.repo_id.split("/")[1][: -len("-GGUF")]) for g in guards)
    chat = {e.repo_id for e in load_catalogue()}
    assert not chat & {g.repo_id for g in guards}


def test_a_guard_downloads_verified_into_its_own_folder(hub: FakeHub) -> None:
    small = load_guard_models()[0]
    assert downloaded_guards() == []
    path = download_guard_model(small, endpoint=hub.endpoint)
    assert path == guards_dir() / small.filename
    assert path.read_bytes() == hub.repos[small.repo_id][small.filename].data
    assert downloaded_guards() == [(small, path)]
    assert list_models(include_other_apps=False) == []  # a guard is no chat model
    assert guard_path(small.filename.removesuffix(".gguf")) == path  # --guard-model NAME
    large = load_guard_models()[1]
    hub.repos[large.repo_id][large.filename].corrupt = True
    with pytest.raises(ChecksumMismatchError):
        download_guard_model(large, endpoint=hub.endpoint)
    assert [g for g, _ in downloaded_guards()] == [small]
