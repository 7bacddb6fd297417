"""Attention projections and the head on the kernel op (`engine.fastpath.matmul_op`).

Where a file's experts or MLPs run on the kernel (here forced with ``HEARTH_DENSE_KERNEL=1``
on tiny random files, each with its float32 transformers twin), its q/k/v/o projections and
output head run as ``HearthMatMul`` nodes over the mapped file too: the exact graph (float
reference) must still match transformers, ``weights.bin`` must hold none of them, the
estimates must count them at their file size, ``HEARTH_MATRIX_KERNEL=0`` must give the
MatMulNBits graph back, and closing the runner must unmap them.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.fastpath.cache import MODEL_FILE, graph_folder
from engine.fastpath.matmul_op import LAYOUT_FILE, OP_TYPE, mapped_matrix_keys
from engine.fastpath.plan import file_matrix_names, kernel_enabled, matrices_on
from engine.gguf.header import read_gguf_summary
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW, assert_matches_reference

pytestmark = pytest.mark.skipif(not kernel_enabled(), reason="the expert kernel is not built here")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("matrices")
    out = {}
    for arch, quant in [("llama", "Q4_K_M"), ("qwen2", "Q8_0")]:
        path = root / f"{arch}-{quant}.gguf"
        out[arch] = (path, write_tiny_model(path, arch, quant))
    return out


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_DENSE_KERNEL", "1")  # tiny files: force the kernel path on
    for name in ("HEARTH_EXPERT_KERNEL", "HEARTH_MATRIX_KERNEL", "HEARTH_DENSE_KERNEL_MIN_BYTES"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def _runner(path: Path, accuracy: int, on: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "1" if on else "0")
    runner = build_fast_runner(path, accuracy=accuracy, window=WINDOW)
    assert runner is not None
    assert (runner._matrices is not None) == on
    return runner


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_the_exact_graph_still_matches_transformers(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], arch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, reference = files[arch]
    assert_matches_reference(_runner(path, 0, True, monkeypatch), reference)


def test_projections_and_head_leave_the_weights_file(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx

    path = files["llama"][0]
    names = file_matrix_names(path)
    layers = len({n.split(".")[1] for n in names if n.startswith("blk.")})
    assert {"output.weight", "blk.0.attn_q.weight", "blk.0.attn_output.weight"} <= names
    nodes, sizes = {}, {}
    for on in (True, False):
        _runner(path, 4, on, monkeypatch)
        folder = graph_folder(path, 4)
        model = onnx.load(str(folder / MODEL_FILE), load_external_data=False)
        nodes[on] = [n for n in model.graph.node if n.op_type == OP_TYPE]
        sizes[on] = sum(p.stat().st_size for p in folder.iterdir())
        if on:
            listed = set(json.loads((folder / LAYOUT_FILE).read_text())["matrices"])
            assert listed == names
    # q, k and v apart (different types) or fused, the output projection, and the head
    assert len(nodes[True]) >= 2 * layers + 1 and not nodes[False]
    on_file = sum(t.nbytes for t in read_gguf_summary(path).tensors if t.name in names)
    assert sizes[False] - sizes[True] >= on_file > 0  # repacked, they took more than the file


def test_int8_graph_stays_close_to_matmulnbits(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = files["qwen2"][0]
    outs = []
    for on in (True, False):
        runner = _runner(path, 4, on, monkeypatch)
        prompt = runner.extend(PROMPT)
        outs.append(np.concatenate([prompt, runner.extend([5]), runner.extend([33])]))
    got, want = outs
    cosine = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
    assert float(cosine.min()) > 0.995, cosine
    assert float((got.argmax(-1) == want.argmax(-1)).mean()) >= 0.75


def test_the_estimates_count_them_at_their_file_size(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gguf import GGMLQuantizationType

    from engine.fastpath.cache import _converted_source_bytes
    from engine.gguf.repack import resident_nbytes
    from engine.models import _fast_weight_bytes

    path = files["llama"][0]
    summary = read_gguf_summary(path)
    names = file_matrix_names(path)
    mats = [t for t in summary.tensors if t.name in names]
    on_file = sum(t.nbytes for t in mats)
    with_op = _fast_weight_bytes(summary)
    converted_with = _converted_source_bytes(path)
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "0")
    repacked = sum(
        int(resident_nbytes(GGMLQuantizationType(t.ggml_type), t.shape[0], t.shape[-1]))
        for t in mats
    )
    assert _fast_weight_bytes(summary) - with_op == repacked - on_file
    assert _converted_source_bytes(path) - converted_with == on_file


def test_closing_the_runner_unmaps_them(
    cache_dir: Path, files: dict[str, tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(mapped_matrix_keys())
    runner = _runner(files["qwen2"][0], 4, True, monkeypatch)
    assert len(set(mapped_matrix_keys()) - before) == 1
    del runner
    gc.collect()
    assert set(mapped_matrix_keys()) == before


def test_the_policy() -> None:
    from gguf import GGMLQuantizationType

    assert matrices_on("qwen3moe", True, False) and matrices_on("llama", False, True)
    assert not matrices_on("llama", False, False)  # nothing else on the kernel: MatMulNBits
    from engine.fastpath.plan import projection_names

    assert matrices_on("qwen35moe", True, False)
    q4k = int(GGMLQuantizationType.Q4_K)
    hybrid = projection_names([("blk.0.attn_qkv.weight", q4k), ("blk.3.attn_q.weight", q4k),
                               ("output.weight", q4k)], True, hybrid=True)  # fmt: skip
    assert hybrid == {"blk.3.attn_q.weight", "output.weight"}  # DeltaNet's attn_qkv stays
