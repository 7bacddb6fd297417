"""`python -m engine pull/models/inspect` in real subprocesses, the Hub being a fake one on
127.0.0.1 reached through HF_ENDPOINT: JSON lines, exit codes, the sha256 refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[3]
REPO = "tester/Tiny-GGUF"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        for quant in ("Q4_1", "Q8_0"):
            path = write_tiny_gguf(tmp_path / f"tiny-{quant}.gguf", matrix_type=quant)
            fake.add(REPO, f"tiny-{quant}.gguf", path.read_bytes())
        yield fake


def run_cli(tmp: Path, *args: str, endpoint: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_ENDPOINT": endpoint,
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": str(tmp / "hf-home"),
        "NO_PROXY": "127.0.0.1,localhost",
        "HOME": str(tmp / "home"),  # no other app's models from the real home
        "HEARTH_MODELS_DIR": str(tmp / "models"),
        "HEARTH_CACHE_DIR": str(tmp / "cache"),
    }
    env.pop("HF_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )


def lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_pull_json_progress_then_done(hub: FakeHub, tmp_path: Path) -> None:
    proc = run_cli(tmp_path, "pull", REPO, "--quant", "q8_0", "--json", endpoint=hub.endpoint)
    assert proc.returncode == 0, proc.stderr
    out = lines(proc)
    spec = hub.repos[REPO]["tiny-Q8_0.gguf"]
    progress, done = out[:-1], out[-1]
    assert progress and all(o["type"] == "progress" and o["total"] == spec.size for o in progress)
    assert progress[-1]["downloaded"] == spec.size
    assert [o["downloaded"] for o in progress] == sorted(o["downloaded"] for o in progress)
    assert done == {
        "type": "done",
        "path": str(tmp_path / "models" / "tiny-Q8_0.gguf"),
        "sha256": spec.sha256,
        "mmproj": None,  # the repo has no vision projector
        "mmproj_sha256": None,
    }
    assert Path(done["path"]).read_bytes() == spec.data


def test_pull_refuses_a_corrupted_file(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos[REPO]["tiny-Q4_1.gguf"].corrupt = True
    proc = run_cli(
        tmp_path, "pull", REPO, "--file", "tiny-Q4_1.gguf", "--json", endpoint=hub.endpoint
    )
    assert proc.returncode != 0
    error = lines(proc)[-1]
    assert error["type"] == "error" and "failed its sha256 check" in error["message"]
    assert not list((tmp_path / "models").rglob("*.gguf*"))
    plain = run_cli(tmp_path, "pull", REPO, "--file", "tiny-Q4_1.gguf", endpoint=hub.endpoint)
    assert plain.returncode != 0 and "failed its sha256 check" in plain.stderr


def test_pull_errors_name_the_problem(hub: FakeHub, tmp_path: Path) -> None:
    unknown = run_cli(
        tmp_path, "pull", "nobody/None", "--quant", "Q4_K_M", "--json", endpoint=hub.endpoint
    )
    assert unknown.returncode != 0 and "not found" in lines(unknown)[-1]["message"]
    no_tag = run_cli(tmp_path, "pull", REPO, "--quant", "Q6_K", "--json", endpoint=hub.endpoint)
    assert no_tag.returncode != 0
    assert "available: Q4_1, Q8_0" in lines(no_tag)[-1]["message"]


def test_models_and_inspect_json(hub: FakeHub, tmp_path: Path) -> None:
    assert run_cli(tmp_path, "pull", REPO, "--quant", "Q4_1", endpoint=hub.endpoint).returncode == 0
    lmstudio = tmp_path / "home" / ".lmstudio" / "models" / "someone" / "Some-GGUF"
    lmstudio.mkdir(parents=True)
    write_tiny_gguf(lmstudio / "other-Q8_0.gguf", matrix_type="Q8_0")
    proc = run_cli(tmp_path, "models", "--json")
    assert proc.returncode == 0, proc.stderr
    models = json.loads(proc.stdout)
    fields = {
        "path",
        "name",
        "architecture",
        "quantization",
        "size_bytes",
        "parameters",
        "context_length",
        "ram_estimate_bytes",
        "fast_path",
    }
    assert all(fields <= set(m) for m in models)
    by_source = {m["source"]: m for m in models}
    assert set(by_source) == {"hearth", "lmstudio"}
    ours = by_source["hearth"]
    assert ours["path"] == str(tmp_path / "models" / "tiny-Q4_1.gguf")
    assert (ours["architecture"], ours["quantization"], ours["fast_path"]) == (
        "llama",
        "Q4_1",
        True,
    )
    assert ours["context_length"] == 1024 and ours["ram_estimate_bytes"] > ours["size_bytes"]

    local = run_cli(tmp_path, "inspect", ours["path"], "--json")
    assert local.returncode == 0, local.stderr
    assert {k: v for k, v in json.loads(local.stdout).items() if k in fields} == {
        k: v for k, v in ours.items() if k in fields
    }
    url = f"{hub.endpoint}/{REPO}/resolve/main/tiny-Q4_1.gguf"
    remote = run_cli(tmp_path, "inspect", url, "--json")
    assert remote.returncode == 0, remote.stderr
    summary = json.loads(remote.stdout)
    assert summary["path"] == url and summary["parameters"] == ours["parameters"]


def test_inspect_bad_files_exit_nonzero(tmp_path: Path) -> None:
    (tmp_path / "notes.gguf").write_text("not a model")
    proc = run_cli(tmp_path, "inspect", str(tmp_path / "notes.gguf"), "--json")
    assert proc.returncode == 2 and "not a GGUF" in proc.stderr
    missing = run_cli(tmp_path, "inspect", str(tmp_path / "absent.gguf"))
    assert missing.returncode == 2 and "is not a file" in missing.stderr


def test_models_catalogue_lists_each_model_with_its_licence(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "models", "--catalogue")
    assert out.returncode == 0, out.stderr
    assert "Qwen3 30B-A3B Instruct 2507  [30.5B (3.3B per token), Q4_K_M, licence: Apache-2.0]" in (
        out.stdout
    )
    assert "licence: Llama 3.2 Community License" in out.stdout
    assert "reads images with its mmproj (mmproj-F16.gguf)" in out.stdout
    listed = json.loads(run_cli(tmp_path, "models", "--catalogue", "--json").stdout)
    assert len(listed) >= 15 and all(entry["licence"] for entry in listed)
    assert {"repo_id", "params_b", "active_params_b", "multimodal", "licence_url"} <= set(listed[0])


def test_pull_text_progress_into_a_log_is_a_line_every_few_percent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 22 B: with stderr not a terminal, ~1,500 "\\r" updates were glued into one line."""
    from engine.cli.pull import _text_progress

    report = _text_progress("model.gguf", terminal=False)
    total = 15_000_000
    for done in range(0, total + 1, 10_000):  # 1,501 updates, as a 15 MB pull sends
        report(done, total)
    report(total + 5_000_000, total)  # a server sending more than it announced
    err = capsys.readouterr().err
    assert "\r" not in err
    shown = err.splitlines()
    assert 20 <= len(shown) <= 22
    assert shown[0] == "model.gguf: 0.0 / 15.0 MB (0%)"
    assert shown[-1] == "model.gguf: 15.0 / 15.0 MB (100%)"
    assert "20.0" not in err  # never more downloaded than the total


def test_pull_text_progress_on_a_terminal_rewrites_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.cli.pull import _text_progress

    report = _text_progress("m.gguf", terminal=True)
    report(5, 10)
    report(10, 10)
    assert capsys.readouterr().err == "\rm.gguf: 0.0 / 0.0 MB (50%)\rm.gguf: 0.0 / 0.0 MB (100%)"
