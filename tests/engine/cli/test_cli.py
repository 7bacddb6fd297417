"""`python -m engine generate/tokenize` in a real subprocess on the tiny model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]


def cli_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path}


def engine_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=cli_env(),
    )


def test_generate_json_lines_and_ctrl_c(
    tiny_model_dir: Path, tiny_engine: Any, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "Name three colours."}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "generate", "--model", str(tiny_model_dir),
         "--messages", str(chat), "--system", "Be brief.", "--temperature", "0",
         "--repetition-penalty", "1", "--max-tokens", "1000", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=cli_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(3)]  # three deltas streamed, then Ctrl-C
    proc.send_signal(signal.SIGINT)
    # The rest through the same file object: communicate() reads the pipe's descriptor and
    # would miss lines readline() had already buffered (a loaded machine: one delta lost).
    out = proc.stdout.read()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 130, err  # cancelled: the conventional Ctrl-C status
    records = [json.loads(line) for line in lines + out.splitlines()]
    deltas, done = records[:-1], records[-1]
    assert all(r["type"] == "delta" and r["text"] for r in deltas)
    assert done["type"] == "done"
    assert done["finish_reason"] == "cancelled"
    assert done["text"] == "".join(r["text"] for r in deltas)
    n = done["completion_tokens"]
    assert 3 <= n == len(done["token_ids"]) < 1000
    for key in ("prompt_tokens", "cached_prompt_tokens", "ttft_s", "decode_tokens_per_s"):
        assert isinstance(done[key], int | float)
    # The same greedy ids as the in-process engine on the same request, cut at the same length.
    from engine.types import GenerationRequest, Message, SamplingParams

    request = GenerationRequest(
        (Message("system", "Be brief."), Message("user", "Name three colours.")),
        SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=n),
    )
    finished = list(tiny_engine.generate(request))[-1]
    assert done["token_ids"] == list(finished.token_ids)


def test_tokenize_json(tiny_model_dir: Path, tiny_engine: Any) -> None:
    proc = engine_cli("tokenize", "--model", str(tiny_model_dir), "--json", "Hello, 世界 123")
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout)["ids"]
    assert ids == tiny_engine.tokenize("Hello, 世界 123")
    assert tiny_engine.tokenizer.decode(ids) == "Hello, 世界 123"


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--temperature", "-1"], "temperature"),
        (["--top-p", "1.5"], "top_p"),
        (["--top-p", "0"], "top_p"),
        (["--top-k", "-1"], "top_k"),
        (["--max-tokens", "0"], "max_new_tokens"),
        (["--temperature", "1e-300"], "temperature"),
        (["--repetition-penalty", "1e-320"], "repetition_penalty"),
        (["--presence-penalty", "3"], "presence_penalty"),
    ],
)
def test_bad_sampling_flags_exit_2_with_one_line(flags: list[str], named: str) -> None:
    proc = engine_cli("generate", "--model", "bundled", "--prompt", "hi", *flags)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr


def test_missing_model_exits_2_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    proc = engine_cli("generate", "--model", str(missing), "--prompt", "hi")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: model path does not exist: {missing}"]


def test_unknown_flag_exits_2() -> None:
    proc = engine_cli("generate", "--prompt", "hi", "--temprature", "1")
    assert proc.returncode == 2
    assert "--temprature" in proc.stderr


def test_temperature_zero_with_defaults_equals_transformers_greedy(bundled_engine: Any) -> None:
    # No --repetition-penalty: the defaults must leave greedy decoding plain argmax. On SmolLM2
    # this prompt's reply diverges from token 11 under the old default penalty of 1.1.
    from engine.text import fit_context
    from engine.types import Message
    from tests.engine.loop.test_generate import hf_greedy

    proc = engine_cli("generate", "--model", "bundled", "--dtype", "float32", "--backend", "torch",
                      "--prompt", "Name three colours.", "--temperature", "0", "--max-tokens", "24",
                      "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    chat = (Message("user", "Name three colours."),)
    prompt = fit_context(bundled_engine.tokenizer, chat, context_window=8192, reserve_tokens=24)
    assert done["token_ids"] == hf_greedy(bundled_engine, list(prompt.ids), 24)
