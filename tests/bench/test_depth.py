"""`python -m bench depth`: decode at context depth, the engine next to llama.cpp.

Runs the real command (through `bench.__main__`) on the bundled model with tiny depths, so its
child processes open the real engine (and llama.cpp under both OpenMP wait policies, when
llama-cpp-python is installed; that test skips without it). No timing assertions: the
figures only have to exist and be positive. Bad input is refused in one line, exit code 2,
before any child starts.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from bench.__main__ import main
from bench.depth import CONTENDERS, FIGURES, merge_rounds, table
from bench.measure import NOT_INSTALLED

needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)


def run_depth(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["depth", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_engine_decodes_at_each_depth(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HEARTH_BENCH_NO_LLAMA_CPP", "1")  # the "not installed" rows, no children
    code, out, err = run_depth(["--contexts", "16,48", "--tokens", "4", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["model"] == "bundled" and report["file"].endswith(".gguf")
    assert report["contexts"] == [16, 48] and report["tokens"] == 4 and report["rounds"] == 1
    assert [row["context"] for row in report["rows"]] == [16, 48]
    for row in report["rows"]:
        assert all(row["engine"][f] > 0 for f in FIGURES), row["engine"]
        assert row["llama.cpp"] == row["llama.cpp passive"] == {"error": NOT_INSTALLED}
        assert row["ratios"] == [] and row["ratio"] is None
    text = table(report)
    assert "Hearth decode" in text and f"llama.cpp passive at 16: {NOT_INSTALLED}" in text


@needs_llama_cpp
def test_llama_cpp_runs_both_policies_and_each_round_has_a_ratio(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)  # the tests' own; llama.cpp's default
    monkeypatch.delenv("HEARTH_BENCH_NO_LLAMA_CPP", raising=False)
    argv = ["--contexts", "16", "--tokens", "4", "--rounds", "2", "--json"]
    code, out, err = run_depth(argv, capsys)
    assert code == 0, err
    report = json.loads(out)
    (row,) = report["rows"]
    for name in CONTENDERS:
        assert all(row[name][f] > 0 for f in FIGURES), row[name]
    assert [run[name]["policy"] for run in report["runs"] for name in ("llama.cpp",
            "llama.cpp passive")] == ["default", "passive"] * 2  # fmt: skip
    best = row["llama.cpp best"]
    assert best["decode_tokens_per_s"] == max(
        row[name]["decode_tokens_per_s"] for name in ("llama.cpp", "llama.cpp passive")
    )
    assert best["decode_tokens_per_s_policy"] in ("default", "passive")
    assert len(row["ratios"]) == 2 and all(r > 0 for r in row["ratios"]) and row["ratio"] > 0
    assert "x range at 16" in table(report)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "/no/such/model.gguf"], "must be bundled, synthetic:ARCH:PLAN or a .gguf"),
        (["--contexts", "0,100"], "--contexts must be 1..32768"),
        (["--contexts", "100,abc"], "--contexts wants numbers"),
        (["--contexts", "32769"], "--contexts must be 1..32768"),
        (["--contexts", ""], "--contexts must be 1..32768"),
        (["--tokens", "0"], "--tokens and --rounds must be >= 1"),
        (["--rounds", "0"], "--tokens and --rounds must be >= 1"),
        (["--synthetic", "nosuch:Q4_K_M"], "unknown architecture 'nosuch'"),
        (["--synthetic", "qwen3:Q4_K_M", "--model", "bundled"], "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_depth(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and message in err


def test_rows_take_medians_and_the_ratio_is_against_the_better_policy() -> None:
    def side(decode: float) -> dict[str, Any]:
        figures = {"decode_tokens_per_s": decode, "decode_mean_tokens_per_s": decode - 1,
                   "prefill_tokens_per_s": 10 * decode}  # fmt: skip
        return {"contexts": {"100": figures}}

    rounds = [
        {"engine": side(60.0), "llama.cpp": side(50.0), "llama.cpp passive": side(40.0)},
        {"engine": side(30.0), "llama.cpp": {"error": "died"}, "llama.cpp passive": side(20.0)},
        {"engine": side(45.0), "llama.cpp": side(30.0), "llama.cpp passive": side(36.0)},
    ]
    row = merge_rounds(100, rounds)
    assert row["engine"]["decode_tokens_per_s"] == 45.0
    assert row["llama.cpp"]["decode_tokens_per_s"] == 40.0  # median of the two that ran
    assert row["ratios"] == [1.2, 1.5, 1.25] and row["ratio"] == 1.25
    assert row["llama.cpp passive"]["decode_tokens_per_s"] == 36.0
    assert row["llama.cpp best"]["decode_tokens_per_s"] == 40.0
    assert row["llama.cpp best"]["prefill_tokens_per_s_policy"] == "default"
    declined = {"error": "the fast path declined x: why"}
    failed = merge_rounds(
        100, [{"engine": declined, "llama.cpp": side(5.0), "llama.cpp passive": side(4.0)}]
    )
    assert failed["engine"] == declined
    assert failed["ratios"] == [] and failed["ratio"] is None
