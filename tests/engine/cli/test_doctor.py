"""`python -m engine doctor`: each check's finding and fix, in a real child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def doctor(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "doctor", "--json", *args],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=300, check=False,
        cwd=Path(__file__).resolve().parents[3],
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in report["checks"]}


def test_a_hidden_compiler_fails_with_its_fix(tmp_path: Path) -> None:
    # PATH holds no cc or gcc, and CC is empty: the kernel has no compiler.
    env = {"PATH": str(tmp_path), "CC": "", "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    code, report = doctor(env, "--no-models")
    check = by_name(report)["kernel compiler"]
    assert check["status"] == "fail" and "no C compiler" in check["detail"]
    assert "apt install gcc" in check["fix"]
    assert code == 1 and report["ok"] is False


def test_a_damaged_model_and_a_stale_cache_are_named(tmp_path: Path) -> None:
    models, cache = tmp_path / "models", tmp_path / "cache"
    models.mkdir()
    (models / "broken.gguf").write_bytes(b"GGUF" + b"\x00" * 12)  # a header cut short
    stale = cache / "onnx" / "gone-123"
    stale.mkdir(parents=True)
    (stale / "source.json").write_text(json.dumps({"source": str(tmp_path / "deleted.gguf")}))
    env = {"HEARTH_MODELS_DIR": str(models), "HEARTH_CACHE_DIR": str(cache)}
    code, report = doctor(env)
    checks = report["checks"]
    broken = [c for c in checks if c["name"] == "model"]
    assert len(broken) == 1 and "broken.gguf" in broken[0]["detail"]
    assert "download it again" in broken[0]["fix"]
    assert by_name(report)["cache"]["status"] == "warn"
    assert "onnx/gone-123" in by_name(report)["cache"]["detail"]
    assert code == 1
    names = {c["name"] for c in checks}
    assert {"CPU", "kernel compiler", "Qt", "keyring", "disk", "cache", "models"} <= names


def test_each_model_that_opens_says_which_kernel_runs_its_matrices(tmp_path: Path) -> None:
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    models, cache = tmp_path / "models", tmp_path / "cache"
    models.mkdir()
    write_tiny_gguf(models / "tiny.gguf")
    env = {"HEARTH_MODELS_DIR": str(models), "HEARTH_CACHE_DIR": str(cache)}
    # A tiny file: ONNX Runtime's MatMulNBits everywhere, and the plan says why.
    _, report = doctor({**env, "HEARTH_MATRIX_KERNEL": "0"})
    plans = [c for c in report["checks"] if c["name"] == "kernel plan"]
    assert len(plans) == 1 and plans[0]["detail"].startswith("tiny.gguf: MatMulNBits")
