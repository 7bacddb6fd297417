"""`python -m bench engine --synthetic / --requantized` and `python -m bench perplexity`.

The tiny synthetic row runs the real engine in its child processes (``--size tiny``); the
llama.cpp column is exercised for its "not installed" path through HEARTH_BENCH_NO_LLAMA_CPP=1,
which the children honour. No timing assertions: figures only have to exist and be positive.
Tests that need llama-cpp-python (not installed by `make test`) skip without it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from bench.synthetic import (
    ENGINE_KEYS,
    LLAMA_KEYS,
    RATIOS,
    Source,
    _agreement,
    forced_agreement,
    format_report,
    measure_row,
    parse_spec,
    ratios,
)
from engine.errors import InvalidParamsError

TEXT = Path(__file__).resolve().parents[1] / "data" / "perplexity.txt"
ROW_KEYS = {"arch", "plan", "file", "file_gb", "load_avg", "engine", "llama_cpp", "ratios"}
ROW_KEYS |= {"greedy_agree", "forced_agree", "forced_positions", "split_gap"}
needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))  # children inherit it
    return tmp_path / "cache"


def bench_args(argv: list[str]) -> argparse.Namespace:
    from bench.__main__ import parse_args

    return parse_args("engine", list(argv))


def run_bench(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from bench.__main__ import main

    code = main(["engine", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ arguments


def test_spec_all_is_every_arch_in_both_plans() -> None:
    from bench.synth.configs import DENSE_ARCHS as ARCHS
    from bench.synth.moe import MOE_ARCHS

    pairs = parse_spec("all")
    every = (*ARCHS, *MOE_ARCHS, "qwen35", "gemma4", "qwen35moe", "gemma4moe")  # dense, MoE, ...
    assert pairs == [(a, p) for a in every for p in ("Q4_K_M", "Q8_0")]


def test_spec_lists_plans_defaults_and_repeats() -> None:
    assert parse_spec("qwen2:Q4_K_M, gemma3:Q8_0") == [("qwen2", "Q4_K_M"), ("gemma3", "Q8_0")]
    assert parse_spec("phi3") == [("phi3", "Q4_K_M"), ("phi3", "Q8_0")]
    assert parse_spec("llama:Q8_0,llama:Q8_0,llama:Q6_K") == [("llama", "Q8_0"), ("llama", "Q6_K")]
    assert len(parse_spec("all:Q8_0")) == len(parse_spec("all")) // 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [("mistral:Q4_K_M", "unknown architecture 'mistral'"), ("qwen2:Q3", "unknown plan 'Q3'")],
)
def test_bad_spec_is_named(spec: str, message: str) -> None:
    with pytest.raises(InvalidParamsError, match=message):
        parse_spec(spec)


def test_bench_arguments() -> None:
    args = bench_args(["--synthetic", "qwen2:Q8_0", "--tokens", "5", "--json"])
    assert args.synthetic == "qwen2:Q8_0" and args.tokens == 5 and args.json
    assert not args.requantized and args.size == "real"
    args = bench_args(["--requantized"])
    assert args.requantized and args.synthetic is None and args.tokens == 64


def test_bad_tokens_and_spec_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_bench(["--synthetic", "qwen2", "--tokens", "0"], capsys)
    assert code == 2 and "--tokens must be in 1.." in err
    code, _, err = run_bench(["--synthetic", "llama2"], capsys)
    assert code == 2 and "unknown architecture 'llama2'" in err


# ------------------------------------------------------------------ rows


def test_tiny_row_through_the_real_engine_without_llama_cpp(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_BENCH_NO_LLAMA_CPP", "1")
    argv = ["--synthetic", "qwen2:Q8_0", "--size", "tiny", "--tokens", "4", "--json"]
    code, out, _ = run_bench(argv, capsys)
    assert code == 0
    report = json.loads(out)
    assert set(report) == {"tokens", "prompt_tokens", "size", "rows"}
    assert report["tokens"] == 4 and report["prompt_tokens"] == 128 and report["size"] == "tiny"
    (row,) = report["rows"]
    assert set(row) == ROW_KEYS
    assert set(row["engine"]) == set(ENGINE_KEYS) and set(row["llama_cpp"]) == set(LLAMA_KEYS)
    assert set(row["ratios"]) == set(RATIOS)
    engine = row["engine"]
    assert engine["fast_path"] is True and engine["reason"] is None and engine["error"] is None
    for key in ("first_open_s", "second_open_s", "prefill_tokens_per_s", "decode_tokens_per_s"):
        assert engine[key] > 0, key
    assert engine["peak_rss_mb"] > 0 and engine["convert_peak_rss_mb"] > 0
    assert row["llama_cpp"]["error"] == "not installed (make bench-peers)"
    assert row["llama_cpp"]["peak_rss_mb"] is None
    assert row["ratios"] == dict.fromkeys(RATIOS) and row["greedy_agree"] is None
    assert row["file_gb"] > 0 and Path(row["file"]).parent == cache_dir / "bench-models"
    assert not (cache_dir / "onnx").exists() or not any((cache_dir / "onnx").iterdir())
    assert {p.suffix for p in (cache_dir / "bench-models").iterdir()} == {".gguf", ".npy"}
    text = format_report(report["rows"])
    assert "qwen2" in text and "| yes" in text and "llama.cpp: not installed" in text


def test_a_row_that_cannot_be_made_reports_its_error(cache_dir: Path) -> None:
    def broken() -> Path:
        raise OSError("disk full")

    row = measure_row(Source("gemma2", "Q8_0", broken), tokens=4)
    assert set(row) == ROW_KEYS | {"error"} and row["error"] == "OSError: disk full"
    assert row["engine"]["fast_path"] is None and row["ratios"]["decode"] is None
    assert "gemma2 Q8_0: OSError: disk full" in format_report([row])


def test_ratios_and_notes() -> None:
    engine = {"decode_tokens_per_s": 30.0, "prefill_tokens_per_s": 200.0, "peak_rss_mb": 400.0}
    llama = {"decode_tokens_per_s": 20.0, "prefill_tokens_per_s": 400.0, "peak_rss_mb": 800.0}
    assert ratios(engine, llama) == {"decode": 1.5, "prefill": 0.5, "rss": 0.5}
    assert ratios(engine, {**llama, "error": "boom"}) == dict.fromkeys(RATIOS)
    declined: dict[str, Any] = {
        "arch": "phi3", "plan": "Q8_0", "file_gb": 4.1, "greedy_agree": None,
        "engine": {"fast_path": False, "reason": "no such quant"},
        "llama_cpp": {"stopped_early": "3 of 4 decode steps"}, "ratios": {},
    }  # fmt: skip
    text = format_report([declined])
    assert "phi3 Q8_0: fast path declined: no such quant" in text and "| NO" in text
    assert "stopped early: 3 of 4" in text


def test_greedy_agreement_counts_the_shared_lead() -> None:
    assert _agreement([5, 6, 7, 8], [5, 6, 9, 8]) == 2
    assert _agreement([5, 6, 7], [5, 6, 7, 8]) == 3  # the shorter stream is all shared
    assert _agreement([4, 6], [5, 6]) == 0  # the first pick differs: 0, whatever follows
    assert _agreement([], [5]) is None and _agreement([5], None) is None


def test_forced_agreement_and_the_gap_where_the_streams_split() -> None:
    mine = [5, 6, 7, 8, 9]  # the engine's stream; llama.cpp's was [5, 6, 3, ...]
    picks, gaps = [5, 6, 3, 8, 1], [0.0, 0.0, 2e-5, 0.0, 0.4]  # llama.cpp fed `mine`
    row = forced_agreement(mine, picks, gaps, split=_agreement(mine, [5, 6, 3, 3]))
    assert row == {"forced_agree": 3, "forced_positions": 5, "split_gap": 2e-5}
    same = forced_agreement(mine, mine, [0.0] * 5, split=5)  # never split: no gap
    assert same == {"forced_agree": 5, "forced_positions": 5, "split_gap": None}
    capped = forced_agreement(mine, picks[:3], gaps[:3], split=2)  # llama.cpp was fed 3
    assert capped["forced_agree"] == 2 and capped["forced_positions"] == 3
    assert forced_agreement(None, picks, gaps, 0) == dict.fromkeys(row)
    text = format_report([{
        "arch": "qwen3moe", "plan": "Q4_K_M", "greedy_agree": 2, **row,
        "engine": {}, "llama_cpp": {}, "ratios": {},
    }])  # fmt: skip
    assert "qwen3moe Q4_K_M: greedy streams split at token 2 (llama.cpp's logits" in text
    assert "2e-05 apart); fed the engine's tokens, llama.cpp picks the same at 3 of 5" in text


# ------------------------------------------------------------------ requantized / perplexity


def test_f16_copy_keeps_metadata_and_values(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    from bench.requant import SKIPPED_FIELDS, dequantize_to_f16
    from bench.synth.core import write_tiny_model

    source, target = tmp_path / "q.gguf", tmp_path / "f16.gguf"
    write_tiny_model(source, "qwen2", "Q4_K_M")
    dequantize_to_f16(source, target)
    before, after = gguf.GGUFReader(source), gguf.GGUFReader(target)
    for key, field in before.fields.items():
        if not key.startswith(SKIPPED_FIELDS) and key != "general.file_type":
            assert after.fields[key].contents() == field.contents(), key
    assert after.fields["general.file_type"].contents() == gguf.LlamaFileType.MOSTLY_F16
    tensors = {t.name: t for t in after.tensors}
    for t in before.tensors:
        copied = tensors[t.name]
        assert copied.tensor_type in (gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F32)
        expected = gguf.quants.dequantize(t.data, t.tensor_type)
        values = np.asarray(copied.data, dtype=np.float32).reshape(expected.shape)
        np.testing.assert_allclose(values, expected, rtol=1e-3, atol=1e-4)


def test_llama_cpp_perplexity_says_not_installed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.__main__ import main

    monkeypatch.setenv("HEARTH_BENCH_NO_LLAMA_CPP", "1")
    argv = ["perplexity", "--file", str(TEXT)]
    assert main(argv) == 2
    assert "llama-cpp-python is not installed (make bench-peers)" in capsys.readouterr().err


@needs_llama_cpp
def test_llama_cpp_perplexity_is_chunk_invariant_and_near_the_engine(cache_dir: Path) -> None:
    from bench.perplexity_llama import LlamaCppRunner, compare_one
    from bench.synth.core import write_tiny_model
    from engine.cli.perplexity import perplexity

    path = cache_dir.parent / "tiny-llama.gguf"
    write_tiny_model(path, "llama", "Q8_0")
    ids = [100 + (i * 7919) % 40000 for i in range(90)]
    runner = LlamaCppRunner(path, context_window=512, longest=len(ids))
    whole, scored = perplexity(runner, ids)
    assert scored == len(ids) - 1 and runner.cached_ids == []
    assert perplexity(runner, ids, chunk=7)[0] == pytest.approx(whole, rel=1e-3)
    row = compare_one("tiny", path, TEXT.read_text(encoding="utf-8"))
    assert "error" not in row and row["tokens"] > 250
    assert abs(row["relative_difference"]) < 0.05


@needs_llama_cpp
def test_tiny_row_with_llama_cpp(cache_dir: Path) -> None:
    from bench.synthetic import synthetic_sources

    (source,) = synthetic_sources([("llama", "Q8_0")], "tiny")
    row = measure_row(source, tokens=4)
    assert "error" not in row, row["error"]
    llama = row["llama_cpp"]
    assert llama["error"] is None and llama["stopped_early"] is None, row
    assert llama["decode_tokens_per_s"] > 0 and llama["prefill_tokens_per_s"] > 0
    assert llama["peak_rss_mb"] > 0 and llama["open_s"] > 0
    assert all(v is not None and v > 0 for v in row["ratios"].values()), row
    assert row["greedy_agree"] is not None
    # llama.cpp fed the engine's 5 ids: where the streams still agreed it picked them again
    assert row["forced_positions"] == 5 and row["forced_agree"] >= row["greedy_agree"]
    assert (row["split_gap"] is None) == (row["greedy_agree"] == 5)
    assert row["split_gap"] is None or row["split_gap"] >= 0
