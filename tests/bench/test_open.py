"""`python -m bench open`: first/later open, peak RSS and decode next to llama.cpp.

Runs the real command (through `bench.__main__`) on a tiny synthetic GGUF written here, so its
child processes open the real engine twice (empty cache, then warm) and llama.cpp under both
OpenMP wait policies when llama-cpp-python is installed. No timing assertions: the figures
only have to exist, be positive and be consistent with each other.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.open import ENGINE_KEYS, LLAMA_KEYS, POLICIES, best_llama, format_report
from bench.synth.core import write_tiny_model
from engine.kernels import build

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


@pytest.fixture
def tiny_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))  # bench-models/ lives here
    path = tmp_path / "tiny-llama-q4km.gguf"
    write_tiny_model(path, "llama", "Q4_K_M")
    return path


def test_open_command_reports_every_figure(
    tiny_gguf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["open", str(tiny_gguf), "--tokens", "3", "--no-drop", "--json"]
    assert main(args + ([] if HAVE_LLAMA else ["--no-llama"])) == 0
    (row,) = json.loads(capsys.readouterr().out)
    first, later = row["engine_first"], row["engine_later"]
    assert set(first) == set(later) == set(ENGINE_KEYS)
    assert first["error"] is None and later["error"] is None, (first, later)
    for side in (first, later):
        assert side["import_s"] > 0 and side["open_s"] > 0 and side["open_cpu_s"] > 0
        assert 0 < side["baseline_rss_mb"] <= side["open_rss_mb"] <= side["peak_rss_mb"]
        assert side["backend"] == "onnx"
    assert later["decode_tokens_per_s"] > 0 and first["decode_tokens_per_s"] is None
    assert first["progress_reports"] > later["progress_reports"] > 0  # the first one converts
    assert first["progress_max_gap_s"] > 0 and first["slowest_stage"]
    assert {"convert", "load"} <= set(first["stage_s"]) and "convert" not in later["stage_s"]
    assert row["page_cache"].startswith("not dropped") and row["load"] == "none"
    # the first open finds this machine's kernel build: it converts, it does not compile
    if build.library() is None:
        assert row["kernel"].startswith("no kernel")
    elif build.library_path() != build.SOURCE.with_name(build.SHIPPED):
        assert row["kernel"].startswith("this machine's kernel build"), row["kernel"]
    assert "kernel at the first open" in format_report([row])
    if HAVE_LLAMA:
        assert set(row["llama_cpp_runs"]) == set(POLICIES)
        best = row["llama_cpp"]
        assert best["error"] is None, row["llama_cpp_runs"]
        assert best["open_s"] > 0 and best["peak_rss_mb"] > 0 and best["decode_tokens_per_s"] > 0
        assert best["policy"] in POLICIES
        assert all(v is not None and v > 0 for v in row["ratios"].values()), row["ratios"]
    report = format_report([row])
    assert tiny_gguf.name in report and "llama.cpp" in report and "load average" in report
    assert "open CPU s" in report


def test_a_file_that_is_not_gguf_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "notes.gguf"
    fake.write_text("hello\n", encoding="utf-8")
    assert main(["open", str(fake), "--no-llama"]) != 0
    err = capsys.readouterr().err.strip()
    assert "is not a GGUF file" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_best_llama_keeps_the_better_figure_of_each_policy() -> None:
    runs = {
        "default": {"open_s": 0.5, "peak_rss_mb": 300.0, "decode_tokens_per_s": 9.0},
        "passive": {"open_s": 0.4, "peak_rss_mb": 310.0, "decode_tokens_per_s": 12.0},
    }
    best = best_llama(runs)
    assert set(best) == set(LLAMA_KEYS)
    assert best == {
        "open_s": 0.4, "peak_rss_mb": 300.0, "decode_tokens_per_s": 12.0,
        "policy": "passive", "error": None,
    }  # fmt: skip
    failed = best_llama({"default": {"error": "not installed"}})
    assert failed["error"] == "not installed" and failed["open_s"] is None
