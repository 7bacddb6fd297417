"""Every tensor a layer needs, checked at load against the architecture's description
(issue 34: A1 at load, A11, A16), as llama.cpp's ``check_tensor_dims`` does.

Each hostile file is a valid tiny synth file with exactly one thing changed
(`tests.engine.support.hostile_gguf.rewrite_gguf`), opened through the real header cache:
refused with a message naming the tensor, before any tokenizer, graph or kernel runs. The
valid files of every architecture pass, among them a 6-layer Gemma 4 whose global layers
carry no V (K = V), which the old guess from the other layers refused.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.configs import tiny_config
from bench.synth.core import write_tiny_model
from bench.synth.gemma4 import PLAIN_GEMMA4, tiny_gemma4_config, write_tiny_gemma4
from bench.synth.moe import write_moe_model
from engine.arch.hparams import read_hparams
from engine.arch.tensors import check_tensors, expected_tensors
from engine.errors import CorruptModelError
from engine.gguf.reader import open_gguf
from engine.header_cache import read_gguf_header
from tests.engine.support.hostile_gguf import rewrite_gguf

GATE_BIAS = "blk.0.ffn_gate_exps.bias"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One valid tiny file per case family (Q8_0: experts stacked as (E, rows, bytes))."""
    d = tmp_path_factory.mktemp("valid")
    write_moe_model(d / "qwen3moe.gguf", "qwen3moe", "Q8_0", reference=False)
    write_moe_model(d / "gpt-oss.gguf", "gpt-oss", "Q8_0", reference=False)
    write_tiny_model(d / "llama.gguf", "llama", "Q8_0", tiny_config("llama", num_hidden_layers=2))
    k_eq_v = tiny_gemma4_config(**{**PLAIN_GEMMA4, "attention_k_eq_v": True})
    write_tiny_gemma4(d / "gemma4-kv.gguf", "Q8_0", k_eq_v)
    return {p.stem: p for p in d.glob("*.gguf")}


def _refused(path: Path) -> str:
    with pytest.raises(CorruptModelError) as caught:
        read_gguf_header(path, lambda _p: None)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _first_expert(data: np.ndarray) -> np.ndarray:
    return data[:1]


HOSTILE: dict[str, tuple[str, dict[str, Any], str]] = {
    # A1: gate holds 1 expert while down, up and the router hold 8
    "gate-one-expert": (
        "qwen3moe",
        {"tensors": {"blk.1.ffn_gate_exps.weight": _first_expert}},
        r"blk\.1\.ffn_gate_exps\.weight has shape \[256, 256, 1\].*\[256, 256, 8\]",
    ),
    # A1: gpt-oss's gate bias holds one expert's row, the last tensor in the file
    "bias-one-row-last": (
        "gpt-oss",
        {
            "tensors": {"blk.0.ffn_gate_exps.bias": _first_expert},
            "last": "blk.0.ffn_gate_exps.bias",
        },
        r"blk\.0\.ffn_gate_exps\.bias has shape",
    ),
    # A11: a router wider than the experts
    "router-wider": (
        "qwen3moe",
        {"tensors": {"blk.0.ffn_gate_inp.weight": lambda d: np.concatenate([d, d])}},
        r"blk\.0\.ffn_gate_inp\.weight has shape \[256, 16\]",
    ),
    # A11: expert_used_count past the router's width
    "used-past-width": (
        "qwen3moe",
        {"keys": {"qwen3moe.expert_used_count": 9}},
        "routes 9 experts per token of 8",
    ),
    # A11: ffn_up_exps with half its rows
    "up-rows": (
        "qwen3moe",
        {"tensors": {"blk.0.ffn_up_exps.weight": lambda d: d[:, : d.shape[1] // 2]}},
        r"blk\.0\.ffn_up_exps\.weight has shape \[256, 128, 8\]",
    ),
    # A16: a file declaring 3 layers that holds 2
    "layers-missing": ("llama", {"keys": {"llama.block_count": 3}}, "layer 2 of 3 has no tensors"),
    # ... or 4 billion: refused at the first empty layer, nothing sized by the count
    "layers-4g": ("llama", {"keys": {"llama.block_count": 2**32 - 1}}, "layer 2 of 4294967295"),
    # a layer without one tensor its architecture needs
    "tensor-missing": (
        "llama",
        {"tensors": {"blk.1.attn_v.weight": lambda d: None}},
        r"blk\.1\.attn_v\.weight is missing",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_tensors_that_disagree_are_refused_at_load(
    case: str, files: dict[str, Path], tmp_path: Path
) -> None:
    family, change, named = HOSTILE[case]
    path = rewrite_gguf(files[family], tmp_path / f"{case}.gguf", **change)
    message = _refused(path)
    assert re.search(named, message), message


@pytest.mark.parametrize("family", ["qwen3moe", "gpt-oss", "llama", "gemma4-kv"])
def test_valid_files_pass(family: str, files: dict[str, Path]) -> None:
    read_gguf_header(files[family], lambda _p: None)


def test_gemma4_global_layers_without_v_are_valid(files: dict[str, Path]) -> None:
    """6 layers, layers 2 and 5 global with K = V: no attn_v there, and the file opens."""
    gf = open_gguf(files["gemma4-kv"])
    names = {t.name for t in gf.tensors}
    assert "blk.1.attn_v.weight" in names and "blk.2.attn_v.weight" not in names
    hp = read_hparams(gf)
    check_tensors(gf, hp, files["gemma4-kv"])
    v = [n for n in expected_tensors(hp) if n.name == "blk.2.attn_v.weight"]
    assert v and not v[0].required


def test_the_kernel_file_is_refused_in_one_line_not_run(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """End to end, as a user meets it: `engine generate` on the gate-of-one-expert file
    exited 0 having read 7 experts past the tensor (or died of SIGSEGV). Now: exit 2, one
    line naming the tensor."""
    path = rewrite_gguf(
        files["qwen3moe"], tmp_path / "gate.gguf",
        tensors={"blk.0.ffn_gate_exps.weight": _first_expert}, last="blk.0.ffn_gate_exps.weight",
    )  # fmt: skip
    env = {**os.environ, "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "engine", "generate", "--model", str(path), "--prompt", "hi",
         "--max-tokens", "2", "--backend", "onnx"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1 and "blk.0.ffn_gate_exps.weight has shape" in lines[0], done.stderr
