"""Test-wide settings and shared engine fixtures.

Qt runs offscreen; user data goes to a per-session temp dir (the model cache is shared: it is
only a cache). The engine fixtures are documented below, before their definitions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Keep tests away from the user's real data and model cache.
_tmp = tempfile.mkdtemp(prefix="hearth-tests-")
os.environ.setdefault("HEARTH_DATA_DIR", os.path.join(_tmp, "data"))
# Chats' saved KV caches (on by default in the app) go here, not into the user's cache folder.
os.environ.setdefault("HEARTH_CHAT_CACHE_DIR", os.path.join(_tmp, "chat-caches"))
# QSettings (and anything else XDG) of app subprocesses, e.g. `--screenshot`, stays here too.
os.environ["XDG_CONFIG_HOME"] = os.path.join(_tmp, "config")
# As engine/__init__ does for the app: OpenMP threads sleep when idle instead of spinning (test
# modules import torch before the engine does, so set it before any of them is collected).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Files that run longest (seconds of test time on the project's 2-core machine, 2026-12-06),
# collected first, longest first: `make test` deals whole files to two workers in collection
# order (``--dist loadfile --no-loadscope-reorder``; xdist's default order, by test count,
# dealt the 2-minute server soak, one test, near the end, where it ran alone while the other
# worker had nothing left: ~2 of 11 minutes). The rest follow in their usual order.
LONG_FIRST = (
    "tests/engine/serve/test_server_soak.py",  # 121 s
    "tests/engine/runners/test_torch_path.py",  # 67 s
    "tests/engine/loop/test_exact_steps.py",  # 53 s
    "tests/engine/gguf/test_repack_iq.py",  # 43 s
    "tests/engine/gguf/test_synth.py",  # 40 s
    "tests/engine/arch/test_arch_tensors.py",  # 38 s
    "tests/engine/gguf/test_gguf_metadata.py",  # 37 s
    "tests/engine/arch/test_arch_parity.py",  # 36 s
    "tests/engine/cli/test_cli.py",  # 34 s
    "tests/engine/serve/test_server.py",  # 33 s
    "tests/bench/test_synthetic.py",  # 31 s
    "tests/engine/kernels/test_kernel_cache.py",  # 30 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `LONG_FIRST` files' tests first, each file's and the rest's order kept."""
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Delete the model cache's folders derived from temporary test files that are gone.

    The model cache is shared on purpose (the bundled model converts once), but every tiny GGUF
    a test writes under the temp folder gets its own conversion and header cache, which used to
    pile up to gigabytes in ~/.cache/hearth. Only folders whose recorded source lay in the temp
    folder and no longer exists go (pytest keeps its last three runs' temp folders, so another
    worker's files still in use are kept)."""
    from engine.cache_folders import cache_root, discard_folder, source_of

    temp = os.path.realpath(tempfile.gettempdir()) + os.sep
    for kind in ("onnx", "gguf-meta", "onnx-embed"):
        parent = cache_root() / kind
        if not parent.is_dir():
            continue
        for folder in parent.iterdir():
            source = source_of(folder) if folder.is_dir() else None
            if source and source.startswith(temp) and not os.path.exists(source):
                discard_folder(folder)
    # This process's own data folder (chats, settings, saved caches) goes too: 590 of them had
    # piled up in /tmp on the project's machine.
    shutil.rmtree(_tmp, ignore_errors=True)


# --- Shared engine fixtures (owned by the engine runtime; reuse them, do not load your own) ---
#
# tiny_model_dir  (session) a Hugging Face folder holding a tiny random Llama (2 layers, hidden
#                 64, seeded, float32) built from a config in code, with the bundled SmolLM2
#                 tokenizer and chat template. Offline; loads in about a second.
# tiny_engine     (session) Engine(tiny_model_dir, dtype="float32", backend="torch"). Random
#                 weights: its text is gibberish but deterministic under greedy decoding.
# bundled_engine  (session) Engine("bundled", dtype="float32", backend="torch"): SmolLM2-135M.
#                 Its float32 weights are dequantised from the GGUF in memory (~10 s; nothing
#                 is written but the small header cache). Use only in tests marked slow.
# The model cache (HEARTH_CACHE_DIR, default the user cache dir) is shared on purpose.

TINY_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 2,
}


def _bundled_tokenizer_into(folder: Path) -> None:
    """Copy the bundled tokenizer into ``folder`` from the GGUF header cache (read once)."""
    from engine.loader import read_gguf_header
    from engine.models import bundled_gguf_path

    cached = read_gguf_header(bundled_gguf_path(), lambda _p: None)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (cached / name).is_file():
            shutil.copy(cached / name, folder / name)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    _bundled_tokenizer_into(folder)
    from transformers import AutoTokenizer

    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(1234)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, **TINY_CONFIG)).eval()
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_engine(tiny_model_dir: Path) -> Iterator[Any]:
    from engine.engine import Engine

    engine = Engine(str(tiny_model_dir), dtype="float32", device="cpu", backend="torch")
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def bundled_engine() -> Iterator[Any]:
    from engine.engine import Engine

    engine = Engine("bundled", dtype="float32", device="cpu", backend="torch")
    yield engine
    engine.close()
