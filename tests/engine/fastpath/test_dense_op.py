"""Dense MLPs as the expert op over the GGUF's mapped blocks (`engine.fastpath.dense_op`).

Tiny random files (`bench.synth.core`, each with its float32 transformers twin) run with
``HEARTH_DENSE_KERNEL=1``: llama Q4_K_M (Q5_0 gate/up at its 128 width, Q4_K/Q6_K downs),
qwen2 Q4_K_M (Q5_0/Q8_0) and Q8_0, gemma2 (GeGLU) and phi3 (gate and up fused in one
tensor). The exact graph (float activations: the op runs the float reference) must match
transformers as the MatMulNBits graph does (logits within 2e-4, 32 greedy ids); the production
int8 graph must stay as close to the MatMulNBits int8 graph as two 8-bit activation schemes
do, prompt and decode steps. ``weights.bin`` holds no FFN matrix, the estimates count them at
their file size, and the policy keeps small files, other architectures and types the kernel
lacks on MatMulNBits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.fastpath.cache import MODEL_FILE, WEIGHTS_FILE, graph_folder
from engine.fastpath.expert_op import OP_TYPE
from engine.fastpath.plan import (
    dense_kernel_runs,
    every_matrix_on,
    file_dense_bytes,
    is_ffn_matrix,
    kernel_enabled,
)
from engine.gguf.header import read_gguf_summary
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW, assert_matches_reference

CASES = [("llama", "Q4_K_M"), ("qwen2", "Q4_K_M"), ("qwen2", "Q8_0"), ("gemma2", "Q4_K_M"),
         ("phi3", "Q4_K_M")]  # fmt: skip
STEPS = [5, 901, 33, 2]  # decode steps after the prompt (one row each)

pytestmark = pytest.mark.skipif(not kernel_enabled(), reason="the expert kernel is not built here")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("dense")
    out = {}
    for arch, quant in CASES:
        path = root / f"{arch}-{quant}.gguf"
        out[f"{arch}-{quant}"] = (path, write_tiny_model(path, arch, quant))
    return out


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("HEARTH_EXPERT_KERNEL", "HEARTH_DENSE_KERNEL_MIN_BYTES", "HEARTH_MATRIX_KERNEL",
                 "HEARTH_KERNEL_MIN_BYTES"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def _runner(path: Path, accuracy: int, op: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "1" if op else "0")
    runner = build_fast_runner(path, accuracy=accuracy, window=WINDOW)
    assert runner is not None
    assert runner.experts_mapped == op
    return runner


def _ffn_types(path: Path) -> set[str]:
    from gguf import GGMLQuantizationType

    tensors = read_gguf_summary(path).tensors
    return {GGMLQuantizationType(t.ggml_type).name for t in tensors if is_ffn_matrix(t.name)}


def test_the_cases_cover_5_bit_and_k_quant_blocks(files: dict[str, tuple[Path, Any]]) -> None:
    types = set().union(*(_ffn_types(path) for path, _ in files.values()))
    assert {"Q5_0", "Q4_K", "Q6_K", "Q8_0"} <= types


@pytest.mark.parametrize("case", [f"{a}-{q}" for a, q in CASES])
def test_the_exact_op_graph_matches_transformers(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, reference = files[case]
    assert_matches_reference(_runner(path, 0, True, monkeypatch), reference)


@pytest.mark.parametrize("case", ["llama-Q4_K_M", "phi3-Q4_K_M"])
def test_int8_op_graph_stays_close_to_matmulnbits(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = files[case][0]
    outs = []
    for op in (True, False):
        runner = _runner(path, 4, op, monkeypatch)
        prompt = runner.extend(PROMPT)
        outs.append((prompt, np.concatenate([runner.extend([t]) for t in STEPS])))
    for got, want in zip(*outs, strict=True):
        cosine = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
        assert float(cosine.min()) > 0.995, cosine
        assert float((got.argmax(-1) == want.argmax(-1)).mean()) >= 0.75


def test_the_converted_weights_hold_no_ffn_matrix(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One op per layer, no MatMulNBits of an MLP; weights.bin smaller than the MatMulNBits
    graph's by at least the FFN matrices' file bytes (repacked, they take more)."""
    import onnx

    path = files["qwen2-Q4_K_M"][0]
    sizes, folders = {}, {}
    for op in (True, False):
        _runner(path, 4, op, monkeypatch)
        folder = folders[op] = graph_folder(path, 4)
        model = onnx.load(str(folder / MODEL_FILE), load_external_data=False)
        nodes = [n for n in model.graph.node if n.op_type == OP_TYPE]
        mlp = [n for n in model.graph.node if n.op_type == "MatMulNBits"
               and any(o.startswith(("l0.gu", "l0.down")) for o in n.output)]  # fmt: skip
        if op:
            layers = json.loads((folder / "experts.json").read_text())["layers"]
            assert len(nodes) == len(layers) == 2 and not mlp
        else:
            assert not nodes and mlp
        sizes[op] = (folder / WEIGHTS_FILE).stat().st_size
    assert folders[True] != folders[False]  # the choice is part of the cache key
    ffn = sum(t.nbytes for t in read_gguf_summary(path).tensors if is_ffn_matrix(t.name))
    assert sizes[False] - sizes[True] >= ffn > 0


def test_the_estimates_count_mapped_ffn_at_their_file_size(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gguf import GGMLQuantizationType

    from engine.fastpath.cache import _converted_source_bytes
    from engine.gguf.repack import resident_nbytes
    from engine.models import _fast_weight_bytes

    path = files["llama-Q4_K_M"][0]
    summary = read_gguf_summary(path)
    ffn = [t for t in summary.tensors if is_ffn_matrix(t.name)]
    on_file = sum(t.nbytes for t in ffn)
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "0")  # the MLPs alone (test_matmul_op: the rest)
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "1")
    with_op = _fast_weight_bytes(summary)
    assert _converted_source_bytes(path) == path.stat().st_size - on_file
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "0")
    repacked = sum(
        int(resident_nbytes(GGMLQuantizationType(t.ggml_type), t.shape[0], t.shape[-1]))
        for t in ffn
    )
    assert _fast_weight_bytes(summary) - with_op == repacked - on_file
    assert repacked > on_file  # Q5_0 as MatMulNBits' 8-bit codes takes more than the file
    assert _converted_source_bytes(path) == path.stat().st_size


def test_the_policy(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gguf import GGMLQuantizationType as Q

    path = files["llama-Q4_K_M"][0]
    k_quants = [int(Q.Q4_K), int(Q.Q6_K), int(Q.Q5_0)]
    monkeypatch.delenv("HEARTH_DENSE_KERNEL", raising=False)
    assert file_dense_bytes(path) == 0  # a small file keeps MatMulNBits by default
    # With the native ops serving, a big file's MLPs run as HearthMatMul nodes (every-matrix
    # mode), not on this op.
    assert dense_kernel_runs(4 << 30, "qwen2", k_quants) == (not every_matrix_on(4 << 30))
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "0")  # every-matrix mode off: 2 GiB and up only
    assert not dense_kernel_runs(1 << 30, "llama", k_quants)
    assert dense_kernel_runs(4 << 30, "qwen2", k_quants)  # a 7B-sized file runs the op
    assert not dense_kernel_runs(4 << 30, "qwen3moe", k_quants)  # experts: not a plain MLP
    assert not dense_kernel_runs(4 << 30, "gemma4", k_quants)
    assert not dense_kernel_runs(4 << 30, "llama", [int(Q.Q4_K), int(Q.IQ1_S)])  # no decoder
    assert not dense_kernel_runs(4 << 30, "llama", [int(Q.F16)])
    monkeypatch.setenv("HEARTH_DENSE_KERNEL_MIN_BYTES", str(path.stat().st_size))
    assert file_dense_bytes(path) > 0  # the threshold is the file's size: on
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "0")
    assert file_dense_bytes(path) == 0
    assert not dense_kernel_runs(4 << 30, "qwen2", k_quants)
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "1")
    monkeypatch.setenv("HEARTH_EXPERT_KERNEL", "0")  # no kernel: no op, even when forced
    assert not dense_kernel_runs(4 << 30, "qwen2", k_quants)


def test_batched_decode_rows_equal_their_single_steps(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server batches dense files: with the op, 5 rows of one step (the kernel's
    multi-row path) must each equal that row's step alone, bit for bit."""
    from engine.runners.batched import BatchedDecoder

    prompts = [[1, 17, 230, 4051], [99, 12, 7], [811, 3, 45, 600, 2048, 5], [4, 4], [300]]
    step = [5, 901, 33, 1, 2]
    runner = _runner(files["qwen2-Q4_K_M"][0], 4, True, monkeypatch)
    runner.paired_decode = False  # batched rows take ORT's M == 1 attention: compare with that
    alone = []
    for s, prompt in enumerate(prompts):
        runner.reset()
        runner.extend(prompt, last_only=True)
        alone.append(runner.extend([step[s]], last_only=True)[0])
    runner.reset()
    decoder = BatchedDecoder(runner, slots=len(prompts))
    for s, prompt in enumerate(prompts):
        decoder.prefill(s, prompt)
    rows = decoder.decode(step)
    for s, row in enumerate(alone):
        assert np.array_equal(rows[s], row), s
