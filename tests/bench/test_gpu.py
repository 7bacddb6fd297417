"""`python -m bench gpu`'s CPU-side parts: its arguments, its plan, the table and JSON, and
the one clear line on a machine without a GPU (this one, unless nvidia-smi finds one).
The measuring children need a CUDA GPU; no GPU was lent while this was written.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from bench import gpu
from bench.__main__ import main, parse_args
from engine.errors import InvalidParamsError

REPORT = {
    "device": "NVIDIA H200",
    "prompts": [512, 2000],
    "tokens": 128,
    "rows": [
        {"model": "bundled", "contender": "engine",
         "prefill": {"512": 9000.0, "2000": 12000.0}, "decode": 400.0},
        {"model": "bundled", "contender": "llama",
         "prefill": {"512": 18000.0, "2000": 10000.0}, "decode": 500.0},
        {"model": "/m/qwen.gguf", "contender": "engine", "error": "the fast path declined"},
        {"model": "/m/qwen.gguf", "contender": "llama",
         "prefill": {"512": 1.0, "2000": 1.0}, "decode": 1.0},
    ],
}  # fmt: skip


def test_the_arguments_and_their_defaults() -> None:
    args = parse_args("gpu", [])
    assert args.models == gpu.DEFAULT_MODELS and args.tokens == 128
    assert gpu.prompt_lengths(args.prompts) == [512, 2000]
    args = parse_args("gpu", ["--models", "bundled", "--prompts", "64", "--no-install"])
    assert args.no_install and gpu.prompt_lengths(args.prompts) == [64]


@pytest.mark.parametrize("bad", ["x", "", "0", "512,99999", "5.5"])
def test_bad_prompt_lengths_are_one_line(bad: str) -> None:
    with pytest.raises(InvalidParamsError, match="--prompts"):
        gpu.prompt_lengths(bad)


def test_the_plan_installs_onnx_runtimes_cuda_build_at_the_cpu_builds_version(
    capsys: Any,
) -> None:
    from importlib import metadata

    plan = gpu.install_plan("python")
    assert plan[0][-1] == "onnxruntime"  # the CPU build goes first: one onnxruntime module
    assert plan[1][-1] == f"onnxruntime-gpu=={metadata.version('onnxruntime')}"
    assert plan[2][-1] == "llama-cpp-python==0.3.36"
    assert main(["gpu", "--dry-run", "--json", "--models", "bundled"]) == 0
    steps = json.loads(capsys.readouterr().out)["plan"]
    assert len(steps) == 3 + 2 and "ORT CUDA EP" in steps[3] and "llama.cpp (CUDA)" in steps[4]
    assert main(["gpu", "--dry-run", "--no-install"]) == 0
    assert "pip" not in capsys.readouterr().out


def test_the_table_has_every_figure_and_the_ratios() -> None:
    text = gpu.table(REPORT)
    lines = text.splitlines()
    assert lines[0] == "NVIDIA H200: tokens/s"
    assert "prefill 512" in lines[1] and "decode 128" in lines[1]
    engine = next(line for line in lines if "engine (ORT CUDA EP)" in line and "bundled" in line)
    assert "9000.0" in engine and "12000.0" in engine and "400.0" in engine
    assert "the fast path declined" in text  # a failed row says why
    assert "engine / llama.cpp on bundled: prefill 512: 0.50x, prefill 2000: 1.20x, " \
           "decode 0.80x" in text  # fmt: skip
    assert "on /m/qwen.gguf" not in text  # no ratio without both figures


def test_without_a_gpu_it_says_so_in_one_line(capsys: Any) -> None:
    if shutil.which("nvidia-smi") and gpu.gpu_name():
        pytest.skip("a GPU is here")
    assert main(["gpu", "--no-install", "--models", "bundled"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no CUDA GPU") and "\n" not in err


def test_the_prefill_table_takes_llama_cpps_better_policy() -> None:
    from bench.prefill import best_llama, table

    row = {"model": "bundled", "engine": {"prefill": {"512": 300.0, "2000": 200.0}},
           "llama.cpp": {"prefill": {"512": 150.0, "2000": 250.0}},
           "llama.cpp passive": {"prefill": {"512": 200.0}}}  # fmt: skip
    assert best_llama(row, 512) == 200.0 and best_llama(row, 2000) == 250.0
    text = table({"prompts": [512, 2000], "rows": [row, {"model": "x", "engine": {"error": "no"}}]})
    assert " 1.50 " in text and " 0.80" in text and "engine: no" in text


def test_prefill_rounds_keep_medians_and_each_rounds_own_ratio() -> None:
    from bench.prefill import merge_rounds, table

    def side(figure: float | None) -> dict[str, Any]:
        return {"prefill": {"512": figure}} if figure else {"error": "killed"}

    # the machine slows both sides in round 2; each ratio is against llama.cpp's better
    # policy in its own round
    figures = [(100.0, 100.0, 50.0), (60.0, 60.0, None), (130.0, 110.0, 120.0)]
    rounds = [{"engine": side(e), "llama.cpp": side(d), "llama.cpp passive": side(p)}
              for e, d, p in figures]  # fmt: skip
    row = merge_rounds("m.gguf", rounds, [512])
    assert row["engine"]["prefill"]["512"] == 100.0
    assert row["llama.cpp"]["prefill"]["512"] == 100.0
    assert row["llama.cpp passive"]["prefill"]["512"] == 85.0  # the round without it left out
    assert row["ratios"]["512"] == [1.0, 1.0, 1.083]
    text = table({"prompts": [512], "rows": [row]})
    assert " 1.00" in text and "x range 512: 1.00-1.08 over 3 rounds" in text
    lost = merge_rounds("m.gguf", [{**rounds[0], "engine": {"error": "declined"}}], [512])
    assert lost["engine"] == {"error": "declined"} and lost["ratios"]["512"] == []


def test_the_speculation_table_reads_each_reply_kind() -> None:
    from bench.speculation import PROMPTS, table

    assert set(PROMPTS) == {"document", "code", "chat"}
    row = {"kind": "document", "plain": 40.0, "speculative": 120.0, "speedup": 3.0,
           "speculative_forwards_per_token": 0.35, "drafted": 197, "identical": False}  # fmt: skip
    held = {**row, "kind": "code", "verifier": True, "acceptance": 0.8, "switched_off": True}
    text = table({"model": "bundled", "backend": "onnx", "rows": [row, held]})
    cells = "|   40.0 |  120.0 |  3.00 |      0.35 |     197 |"
    assert f"document  {cells}      - | none   | no" in text  # no verifier: no acceptance
    assert f"code      {cells}    80% | off    | no" in text  # the ledger switched it off
    assert "greedy, decode tok/s" in text
    sampled = table({"model": "bundled", "backend": "onnx", "rows": [row], "temperature": 0.7,
                     "seed": 11})  # fmt: skip
    assert "temperature 0.7, seed 11, decode tok/s" in sampled


def test_the_speculation_bench_samples_at_the_apps_filters_when_asked() -> None:
    from bench.speculation import reply_params

    greedy, sampled = reply_params(64, 0.0, 11), reply_params(64, 0.7, 5)
    assert greedy.greedy and greedy.max_new_tokens == 64 and greedy.repetition_penalty == 1.0
    assert (sampled.temperature, sampled.seed, sampled.top_k, sampled.top_p, sampled.min_p) == (
        0.7, 5, 40, 0.95, 0.05)  # fmt: skip
