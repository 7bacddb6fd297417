"""`python -m bench engine` on the tiny model: rows, JSON fields, the llama.cpp ratio column.

No timing assertions: figures only have to exist and be positive. The llama.cpp row is
exercised for its "cannot run" path (the tiny model is a folder, not a .gguf; llama-cpp-python
is usually not installed); the ratio arithmetic is checked on plain rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.engine_speed import add_llama_cpp_ratios, first_difference, format_report


def bench_json(model: Path, rows: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from bench.__main__ import main

    argv = ["engine", "--model", str(model), "--max-tokens", "6", "--json", "--rows", rows]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_engine_row_has_every_figure(
    tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = bench_json(tiny_model_dir, "engine", capsys)
    (row,) = report["rows"]
    assert row["name"] == "engine" and report["max_tokens"] == 6
    for key in ("load_s", "prefill_tokens_per_s", "ttft_turn1_s", "ttft_turn8_s"):
        assert row[key] > 0, key
    for key in ("prompt_tokens", "completion_tokens", "cached_turn8", "peak_rss_mb"):
        assert row[key] > 0, key
    assert row["decode_tokens_per_s"] > 0
    assert row["decode_vs_llama_cpp"] is None  # no llama.cpp row in this run


def test_llama_cpp_and_speculative_rows(
    tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = bench_json(tiny_model_dir, "llama.cpp,speculative", capsys)
    llama, spec = report["rows"]
    assert llama["name"] == "llama.cpp" and llama["error"]  # not a .gguf / not installed
    assert llama["decode_vs_llama_cpp"] is None
    assert spec["name"] == "speculative" and spec["prompt"] == "rewrite"
    assert spec["identical_output"] is True  # greedy output unchanged by speculation
    assert spec["first_difference"] is None
    assert spec["decode_tokens_per_s"] > 0 and spec["plain_decode_tokens_per_s"] > 0
    assert spec["speedup"] > 0 and spec["completion_tokens"] > 0
    text = format_report(report["rows"])
    assert "llama.cpp: " in text and "identical output: yes" in text


def test_ratio_to_llama_cpp_and_missing_base() -> None:
    rows: list[dict[str, Any]] = [
        {"name": "engine-onnx", "decode_tokens_per_s": 60.0},
        {"name": "transformers", "error": "boom"},
        {"name": "llama.cpp", "decode_tokens_per_s": 50.0},
    ]
    add_llama_cpp_ratios(rows)
    assert rows[0]["decode_vs_llama_cpp"] == pytest.approx(1.2)
    assert rows[1]["decode_vs_llama_cpp"] is None
    assert rows[2]["decode_vs_llama_cpp"] == pytest.approx(1.0)
    missing = [{"name": "engine", "decode_tokens_per_s": 9.0}, {"name": "llama.cpp", "error": "x"}]
    add_llama_cpp_ratios(missing)
    assert missing[0]["decode_vs_llama_cpp"] is None


def test_unknown_row_is_named(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    assert main(["engine", "--model", str(tiny_model_dir), "--rows", "engine,llamacpp"]) == 2
    assert "unknown row(s) llamacpp" in capsys.readouterr().err


def test_bench_runs_engine_and_transformers_rows(
    tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.__main__ import main

    args = ["engine", "--model", str(tiny_model_dir), "--max-tokens", "4", "--json"]
    assert main([*args, "--contenders", "engine,transformers"]) == 0
    report = json.loads(capsys.readouterr().out)
    engine, hf = report["rows"]
    assert (engine["name"], hf["name"]) == ("engine", "transformers")
    assert engine["prompt_tokens"] == hf["prompt_tokens"] > 0
    assert engine["cached_turn8"] > 0  # turn 8 reused the conversation's prefix
    for row in (engine, hf):
        assert row["decode_tokens_per_s"] > 0 and row["peak_rss_mb"] > 0


def test_first_difference_of_two_replies() -> None:
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([4, 2], [1, 2]) == 0
    assert first_difference([1, 2], [1, 2, 3]) == 2  # one reply ended early
    row = {"name": "speculative", "prompt": "rewrite", "backend": "onnx", "speedup": 2.0}
    row |= {"decode_tokens_per_s": 100.0, "plain_decode_tokens_per_s": 50.0}
    text = format_report([{**row, "identical_output": False, "first_difference": 0}])
    assert "identical output: NO (from token 0)" in text
    text = format_report([{**row, "identical_output": True, "first_difference": None}])
    assert text.endswith("identical output: yes")
