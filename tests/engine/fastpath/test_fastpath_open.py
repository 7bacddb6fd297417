"""Opening a model on the fast path: the parallel repack pipeline and progress that moves.

The pipeline (`engine.fastpath.pipeline`) must give exactly what `engine.gguf.repack.repack`
gives for every tensor, whatever the slicing, the order of the requests and the budget; the
conversion's progress must name its stages, never go back and report several fractions while
it repacks. Tiny real GGUFs written here (qwen2 in llama.cpp's Q4_K_M mix: Q5_0/Q6_K/Q8_0/
Q4_K rows, a tied head). No timing is asserted.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader

from bench.synth.core import write_tiny_model
from engine.fastpath import cache, pipeline
from engine.fastpath.pipeline import RepackPipeline, planned_tensors
from engine.gguf.repack import repack
from engine.runners import fast_open
from engine.types import LoadProgress

FIELDS = ("codes", "scales", "offsets", "dense", "zero_points")


@pytest.fixture(scope="module")
def qwen2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("open") / "qwen2-q4km.gguf"
    write_tiny_model(path, "qwen2", "Q4_K_M")
    return path


@pytest.mark.parametrize("workers,budget", [(1, 1), (2, 4096), (3, 1 << 30)])
def test_pipeline_equals_whole_tensor_repack(
    qwen2_gguf: Path, monkeypatch: pytest.MonkeyPatch, workers: int, budget: int
) -> None:
    monkeypatch.setattr(pipeline, "SLICE_BYTES", 1500)  # many slices per tensor
    reader = GGUFReader(qwen2_gguf)
    plan = planned_tensors(reader.tensors)
    assert plan[-1].name == "token_embd.weight"  # the tied head, asked for last
    kinds = {t.tensor_type.name for t in plan}
    assert len(kinds) >= 2, kinds  # several GGUF types go through the slices
    names = [t.name for t in plan]
    random.Random(workers).shuffle(names)  # the graph does not ask in file order
    names.append(names[0])  # taken already, so no longer planned: repacked on this thread
    pipe = RepackPipeline(reader.tensors, workers=workers, budget=budget)
    try:
        for name in names:
            t = next(x for x in reader.tensors if x.name == name)
            k, n = (int(x) for x in t.shape)
            want = repack(t.tensor_type, t.data, n, k, name)
            got = pipe.get(name)
            assert (got.n, got.k, got.bits, got.block, got.zero_point) == (
                want.n, want.k, want.bits, want.block, want.zero_point,
            ), name  # fmt: skip
            for field in FIELDS:
                a, b = getattr(got, field), getattr(want, field)
                assert (a is None) == (b is None), (name, field)
                if a is not None:
                    np.testing.assert_array_equal(a, b, err_msg=f"{name}.{field}")
    finally:
        pipe.close()
    assert pipe.done_bytes == pipe.total_bytes > 0


def test_conversion_progress_moves_and_names_its_stages(
    qwen2_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pipeline, "SLICE_BYTES", 2000)
    monkeypatch.setattr(cache, "REPORT_S", 0.0)  # report every tick: a tiny model is quick
    events: list[LoadProgress] = []
    runner, reason = fast_open.fast_runner_or_reason(qwen2_gguf, events.append)
    assert runner is not None, reason
    convert = [e for e in events if e.stage == "convert"]
    fractions = [e.fraction for e in convert]
    assert all(f is not None and 0.0 <= f <= 1.0 for f in fractions), fractions
    assert fractions == sorted(fractions), fractions  # never backwards
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert 0.0 < fractions[1] < 0.1  # off zero at once
    repacking = [e for e in convert if "Repacking" in e.message]
    assert len({e.fraction for e in repacking}) >= 3, repacking  # bytes-based, several steps
    assert all(e.message for e in events)
    stages = [e.stage for e in events]
    assert stages.index("convert") < stages.index("load")


def test_bytes_progress_never_backwards_and_estimates_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter(float(i) for i in range(100))
    monkeypatch.setattr(cache.time, "monotonic", lambda: next(clock))
    seen: list[LoadProgress] = []
    bar = cache.BytesProgress(seen.append, "convert", "Repacking", 0.1, 0.9)
    bar.total = 1000
    for done in (0, 100, 50, 500, 1000):
        bar.tick(done)
    fractions = [e.fraction for e in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.1
    assert fractions[-1] == pytest.approx(0.9)
    assert seen[0].eta_s is None  # no rate yet
    halfway = seen[3]
    assert halfway.eta_s is not None and halfway.eta_s > 0


def test_session_open_reports_progress_and_remembers_its_time(
    qwen2_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    folder = cache.converted_graph(qwen2_gguf, lambda _p: None)
    guess = fast_open.expected_open_s(folder)  # no open yet: from the weights' size
    assert guess > 0 and not (folder / fast_open.TIMING_FILE).exists()
    monkeypatch.setattr(cache, "REPORT_S", 0.01)
    events: list[LoadProgress] = []
    runner, reason = fast_open.fast_runner_or_reason(qwen2_gguf, events.append)
    assert runner is not None, reason
    load = [e for e in events if e.stage == "load" and e.fraction is not None]
    assert load and load[0].fraction == 0.0 and load[0].eta_s == pytest.approx(guess)
    fractions = [e.fraction for e in load]
    assert fractions == sorted(fractions) and all(f <= 0.95 for f in fractions)
    assert all(e.eta_s is not None and e.eta_s >= 0 for e in load)
    measured = fast_open.expected_open_s(folder)  # the next bar uses the time this open took
    assert (folder / fast_open.TIMING_FILE).is_file() and measured != guess


def test_a_later_open_on_the_fast_path_reads_no_transformers_config(tmp_path: Path) -> None:
    """Issue 18 (later open): transformers' config classes import torch.distributed, 1-2 s of
    every open, though the fast path needs no config. It is read only when the torch path is
    asked for, and the reply's end ids are the same either way."""
    import os
    import subprocess
    import sys

    path = tmp_path / "tiny-llama-Q8_0.gguf"
    write_tiny_model(path, "llama", "Q8_0")
    script = (
        "import sys\n"
        "from engine.engine import Engine\n"
        f"engine = Engine({str(path)!r})\n"
        "config_class = 'transformers.models.llama.configuration_llama'\n"
        "print(engine.info.backend, config_class in sys.modules)\n"
        "lazy = engine.loaded.eos_ids\n"
        "from engine.loader import collect_eos_ids, _generation_config\n"
        "loaded = engine.loaded\n"
        "print(lazy == collect_eos_ids(loaded.config, _generation_config(loaded.folder),"
        " loaded.tokenizer), loaded.config.model_type)\n"
    )
    env = {**os.environ, "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the first open converts; the second is the later open
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
    first, second = out.stdout.splitlines()[-2:]
    assert first == "onnx False"
    assert second == "True llama"


def test_too_little_disk_is_refused_up_front_with_a_clear_reason(
    qwen2_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path))
    # The real free space of tmp_path's disk as the margin: the file plus it cannot fit.
    monkeypatch.setattr(cache, "DISK_MARGIN_BYTES", shutil.disk_usage(tmp_path).free)
    runner, reason = fast_open.try_fast_runner(qwen2_gguf, lambda _p: None)
    assert runner is None
    assert reason.startswith("not enough free disk space") and "GB free in" in reason
    assert not list(tmp_path.rglob("weights.bin"))  # nothing written, nothing left behind


def test_disk_shortfall_words_a_full_disk_met_while_writing() -> None:
    folder = Path("/cache/onnx/model-g11")
    assert cache.disk_shortfall(10**9, 5 * 10**9, folder) == ""
    refused = cache.disk_shortfall(10**9, 10**9, folder)
    assert "1.0 GB free in /cache/onnx" in refused and "about 1.6 GB needed" in refused
    assert cache.disk_shortfall(10**9, 5 * 10**9, folder, ran_out=True).startswith("not enough")
