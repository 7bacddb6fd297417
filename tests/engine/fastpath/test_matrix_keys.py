"""Two files whose every matrix runs on the kernel op, open in one process at once.

A file with neither MoE experts nor dense MLPs on the op (every matrix on `HearthMatMul`:
Gemma 4 E2B, Qwen3.5, a big-vocabulary small model) used to register its mapped matrices
under the key ``"None"``, so the second such file found the first one's matrices missing
("no mapped weights for None/...") and fell back to the slow path. Each file now has its own
key (`engine.fastpath.cache`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.fastpath.cache import graph_folder
from engine.fastpath.matmul_op import LAYOUT_FILE
from engine.fastpath.plan import kernel_enabled
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW

pytestmark = pytest.mark.skipif(not kernel_enabled(), reason="the kernel is not built here")


def test_two_files_with_only_matrices_on_the_op_open_side_by_side(every_matrix: Path) -> None:
    paths = []
    for arch, quant in [("llama", "Q4_K_M"), ("qwen2", "Q8_0")]:
        path = every_matrix / f"{arch}-{quant}.gguf"
        write_tiny_model(path, arch, quant)
        paths.append(path)
    first = build_fast_runner(paths[0], accuracy=4, window=WINDOW)
    second = build_fast_runner(paths[1], accuracy=4, window=WINDOW)
    assert first is not None and second is not None
    assert first._matrices is not None and second._matrices is not None
    keys = [(graph_folder(p, 4) / LAYOUT_FILE).read_text() for p in paths]
    assert keys[0] != keys[1]
    for runner in (first, second):
        logits = runner.extend(PROMPT, last_only=True)
        assert np.isfinite(logits).all()
