"""The models folder, other apps' GGUFs (LM Studio, GPT4All, Ollama manifests -> blobs), delete,
last used, Hub search through the fake Hub, and that `engine.hub` stays torch- and Qt-free."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import huggingface_hub.constants
import pytest

from engine.errors import InvalidParamsError
from engine.hub.library import delete_model, list_models, models_dir, touch_last_used
from engine.hub.search import list_gguf_files, search_repos
from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))


def test_models_dir_defaults_to_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert models_dir() == tmp_path / "models"
    monkeypatch.delenv("HEARTH_MODELS_DIR")
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "data"))
    assert models_dir() == tmp_path / "data" / "models"


def test_lists_ours_and_other_apps_in_place(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    ours = write_tiny_gguf(tmp_path / "models" / "a-Q4_1.gguf")
    (tmp_path / "models" / "broken.gguf").write_text("not a model")  # listed as unreadable
    gpt4all = tmp_path / "home" / ".local" / "share" / "nomic.ai" / "GPT4All"
    gpt4all.mkdir(parents=True)
    write_tiny_gguf(gpt4all / "b-Q8_0.gguf", matrix_type="Q8_0")
    ollama = tmp_path / "home" / ".ollama" / "models"
    (ollama / "blobs").mkdir(parents=True)
    blob = write_tiny_gguf(ollama / "blobs" / ("sha256-" + "ab" * 32), seed=3)
    manifest = ollama / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "layers": [
                    {
                        "mediaType": "application/vnd.ollama.image.model",
                        "digest": "sha256:" + "ab" * 32,
                    },
                    {
                        "mediaType": "application/vnd.ollama.image.template",
                        "digest": "sha256:" + "cd" * 32,
                    },
                ]
            }
        )
    )
    listed = list_models()
    found = {m.source: m for m in listed if not m.unreadable}
    assert set(found) == {"hearth", "gpt4all", "ollama"}
    (broken,) = [m for m in listed if m.unreadable]  # listed with its reason (issue 22 A4)
    assert broken.path.endswith("broken.gguf") and "GGUF" in broken.unreadable
    assert found["hearth"].path == str(ours.resolve())
    assert found["ollama"].path == str(blob.resolve()) and found["ollama"].name == "tiny:latest"
    assert found["gpt4all"].quantization == "Q8_0"
    assert [m.source for m in list_models(include_other_apps=False) if not m.unreadable] == [
        "hearth"
    ]


def test_last_used_orders_and_delete_stays_inside(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    a = write_tiny_gguf(tmp_path / "models" / "a.gguf")
    b = write_tiny_gguf(tmp_path / "models" / "b.gguf", seed=1)
    touch_last_used(b)
    listed = list_models(include_other_apps=False)
    assert [Path(m.path).name for m in listed] == ["b.gguf", "a.gguf"]
    assert listed[0].last_used is not None and listed[0].last_used <= time.time()
    outside = write_tiny_gguf(tmp_path / "elsewhere.gguf")
    with pytest.raises(InvalidParamsError, match="only the models it downloaded"):
        delete_model(outside)
    assert outside.exists()
    delete_model(b)
    assert not b.exists() and [Path(m.path).name for m in list_models(False)] == ["a.gguf"]
    assert a.exists()


def test_search_and_file_list_through_the_fake_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # see test_hub_download
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    data = write_tiny_gguf(tmp_path / "t.gguf").read_bytes()
    with FakeHub() as hub:
        hub.add("tester/Tiny-GGUF", "tiny-Q4_1.gguf", data)
        hub.add("tester/Tiny-GGUF", "mmproj-tiny-F16.gguf", data)  # vision projector: not offered
        hub.add("other/Big-GGUF", "big-Q8_0.gguf", data)
        hits = search_repos("tiny", endpoint=hub.endpoint)
        assert [h.repo_id for h in hits] == ["tester/Tiny-GGUF"]
        (file,) = list_gguf_files("tester/Tiny-GGUF", endpoint=hub.endpoint)
        assert (file.filename, file.size_bytes, file.quant) == ("tiny-Q4_1.gguf", len(data), "Q4_1")
        assert file.sha256 == hub.repos["tester/Tiny-GGUF"]["tiny-Q4_1.gguf"].sha256
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)  # a mirror set in the environment
        assert [h.repo_id for h in search_repos("big")] == ["other/Big-GGUF"]


def test_engine_hub_imports_no_torch_or_qt() -> None:
    code = (
        "import sys, engine.hub.download, engine.hub.fit, engine.hub.library, "
        "engine.hub.remote_header, engine.hub.catalogue; "
        "print(sorted(m for m in ('torch', 'transformers', 'onnxruntime', 'PySide6') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=120,
    ).stdout
    assert out.strip() == "[]"


def test_a_link_in_the_models_folder_is_listed_and_deleted_as_a_link(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    target = write_tiny_gguf(tmp_path / "kept-elsewhere.gguf")
    link = tmp_path / "models" / "linked.gguf"
    link.symlink_to(target)
    (listed,) = list_models(include_other_apps=False)
    assert listed.path == str(link)
    delete_model(link)
    assert not link.is_symlink() and target.exists()
