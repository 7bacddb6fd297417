"""Hostile model folders (issue 22 A16, A17, A18): Ollama manifests with forged digests, an
LM Studio tree 1,200 folders deep, a linked folder inside Hearth's models folder. Real files
in a temporary home."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.errors import InvalidParamsError
from engine.hub.library import delete_model, list_models, ollama_blobs
from tests.engine.support.tiny_gguf import write_tiny_gguf


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "models").mkdir()
    return tmp_path / "home"


def _manifest(root: Path, name: str, digest: str) -> None:
    path = root / "manifests" / "registry.ollama.ai" / "library" / name / "latest"
    path.parent.mkdir(parents=True, exist_ok=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": digest}
    path.write_text(json.dumps({"layers": [layer]}), encoding="utf-8")


def test_ollama_digests_must_be_sha256(home: Path, tmp_path: Path) -> None:
    """A16: "../", absolute and 5,000-character digests are ignored; a real one is listed."""
    root = home / ".ollama" / "models"
    (root / "blobs").mkdir(parents=True)
    secret = write_tiny_gguf(tmp_path / "elsewhere.gguf")
    good = "sha256:" + "ab" * 32
    write_tiny_gguf(root / "blobs" / good.replace(":", "-"))
    _manifest(root, "good", good)
    _manifest(root, "up", "../../../elsewhere.gguf")
    _manifest(root, "absolute", str(secret))
    _manifest(root, "long", "sha256:" + "a" * 5000)
    assert ollama_blobs(root) == [root / "blobs" / good.replace(":", "-")]
    assert [m.source for m in list_models()] == ["ollama"]


def test_an_lm_studio_tree_1200_deep_is_listed_without_recursing(home: Path) -> None:
    """A17: the walk is bounded and iterative: the model near the top is listed, the deep
    tree costs no RecursionError."""
    top = home / ".lmstudio" / "models" / "someone" / "repo"
    top.mkdir(parents=True)
    write_tiny_gguf(top / "near-Q4_1.gguf")
    deep = home / ".lmstudio" / "models" / "deep"
    deep.mkdir()
    here = os.getcwd()
    os.chdir(deep)  # build the tree with relative steps: its full path outgrows PATH_MAX
    try:
        for _ in range(1200):
            os.mkdir("d")
            os.chdir("d")
        Path("buried.gguf").write_bytes(b"GGUF")
        os.chdir(here)
        listed = [Path(m.path).name for m in list_models()]
    finally:
        _remove_chain(deep)  # shutil.rmtree (and pytest's clean-up) recurse: 1,200 is too deep
        os.chdir(here)
    assert listed == ["near-Q4_1.gguf"]


def _remove_chain(top: Path) -> None:
    """Remove a chain of "d" folders (and the files at its bottom) without recursing."""
    os.chdir(top)
    depth = 0
    while os.path.isdir("d"):
        os.chdir("d")
        depth += 1
    for name in os.listdir("."):
        os.remove(name)
    for _ in range(depth):
        os.chdir("..")
        os.rmdir("d")


def test_delete_never_follows_a_linked_folder_out_of_the_models_folder(
    home: Path, tmp_path: Path
) -> None:
    """A18: models/link -> outside; deleting models/link/x.gguf is refused, the file stays."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = write_tiny_gguf(outside / "victim.gguf")
    (tmp_path / "models" / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidParamsError, match="not in Hearth's models folder"):
        delete_model(tmp_path / "models" / "link" / "victim.gguf")
    assert victim.is_file()
    own = write_tiny_gguf(tmp_path / "models" / "own.gguf")
    delete_model(own)  # a file of its own is still deleted
    assert not own.exists()
