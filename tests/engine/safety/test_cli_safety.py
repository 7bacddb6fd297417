"""`python -m engine generate` with the safety flags, in a real child process.

The local guard is a tiny random qwen3 GGUF (`bench.synth`) run by the same engine as a second
model: it cannot answer "Safety: ...", so it shows the path a real Qwen3Guard GGUF takes
(loaded, given Qwen3Guard's template, asked greedily) and what a guard with no verdict does.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def generate(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "generate", "--temperature", "0", "--json", *args],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, lines, done.stderr


@pytest.fixture(scope="module")
def tiny_guard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("guard") / "tiny-qwen3-guard.gguf"
    write_tiny_model(path, "qwen3", "Q8_0")
    return path


@pytest.mark.slow
def test_a_local_guard_file_without_a_verdict_leaves_the_reply_unreviewed(
    tiny_guard: Path,
) -> None:
    code, lines, stderr = generate(
        "--prompt", "Tell me about the sea", "--max-tokens", "8", "--guard-model", str(tiny_guard)
    )
    done = lines[-1]
    assert code == 0 and done["finish_reason"] == "length"
    assert done["safety"]["safety"] == "Unreviewed"
    assert "gave no verdict" in done["safety"]["error"]
    assert "safety: not reviewed by the guard" in stderr


@pytest.mark.slow
def test_a_required_guard_without_a_verdict_stops_the_turn(tiny_guard: Path) -> None:
    code, lines, stderr = generate(
        "--prompt", "Tell me about the sea", "--guard-model", str(tiny_guard), "--guard-required"
    )
    done = lines[-1]
    assert code == 1 and done["finish_reason"] == "error" and done["text"] == ""
    assert "requires the safety review" in stderr and stderr.count("\n") == 1


@pytest.mark.slow
def test_the_blocklist_stops_the_bundled_models_reply_mid_stream(tmp_path: Path) -> None:
    words = tmp_path / "blocklist.txt"
    words.write_text("# the bundled model's greedy reply says it in its first sentence\nhorrors\n")
    code, lines, stderr = generate(
        "--prompt", "Tell me about the sea", "--max-tokens", "60", "--blocklist", str(words),
        "--guard-every", "8",
    )  # fmt: skip
    done = lines[-1]
    shown = "".join(line["text"] for line in lines if line["type"] == "delta")
    assert done["finish_reason"] == "content_filter" and done["text"] == shown
    assert "horrors" not in shown and shown.startswith("The sea")
    assert done["safety"]["categories"] == ["Blocklist"] and done["safety"]["stage"] == "reply"
    assert "the reply was stopped (Unsafe: Blocklist)" in stderr
    assert code == 0


def test_a_guard_endpoint_that_is_down_is_one_clear_line_when_required() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    code, lines, stderr = generate(
        "--prompt", "hi", "--guard-base-url", url, "--guard-model", "Qwen3Guard-Gen-0.6B",
        "--guard-required",
    )  # fmt: skip
    assert code == 1 and lines[-1]["finish_reason"] == "error"
    assert "not available" in stderr and "requires the safety review" in stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--blocklist", "/nonexistent/list.txt"], "cannot read --blocklist"),
        (["--guard-base-url", "http://127.0.0.1:9/v1"], "--guard-base-url needs --guard-model"),
        (["--guard-model", "no-such-guard"], "no model of that name"),
    ],
)
def test_bad_safety_flags_are_one_line(flags: list[str], message: str, tmp_path: Path) -> None:
    code, _lines, stderr = generate("--prompt", "hi", *flags)
    assert code == 2 and message in stderr and stderr.count("\n") == 1
