"""The cores the engine may use (`engine.cpus`): the affinity mask and cgroup quota count.

A child process pinned to one CPU (``os.sched_setaffinity`` before the engine is imported)
must choose one thread everywhere (the kernel's ops, ONNX Runtime's sessions, the governor)
and decode the bundled model, every matrix on the kernel, to the same tokens and the same
last logits bit for bit as a child on two CPUs at two threads. The parsers of ``cpu.max``
and of the kernel's CPU lists, the sibling folding and the governor's idle reading of only
the allowed CPUs' ``/proc/stat`` lines are checked on literal inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cpus import parse_cpu_list, parse_cpu_max, physical_of
from engine.kernels import native
from engine.kernels.pressure import _idle_ticks

ROOT = Path(__file__).resolve().parents[2]
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _child(tmp_path: Path, cpus: list[int], threads: int | None = None) -> dict[str, Any]:
    args = [sys.executable, "-m", "tests.engine.cpus_child", ",".join(map(str, cpus))]
    env = {**os.environ, "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(args + ([str(threads)] if threads else []), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.skipif(len(CPUS) < 2 or not native.serves(), reason="needs 2 CPUs and the ops")
def test_one_allowed_cpu_means_one_thread_and_the_same_decode(tmp_path: Path) -> None:
    one = _child(tmp_path, CPUS[:1])
    assert (one["usable"], one["physical"], one["kernel"], one["governor"]) == (1, 1, 1, 1)
    assert one["ops"] == "native"
    two = _child(tmp_path, CPUS[:2], threads=2)
    assert two["kernel"] == 2
    assert (one["tokens"], one["last"]) == (two["tokens"], two["last"])


def test_cpu_max_lines() -> None:
    assert parse_cpu_max("max 100000\n") is None
    assert parse_cpu_max("150000 100000\n") == 2  # 1.5 cores: rounded up
    assert parse_cpu_max("100000 100000") == 1
    assert parse_cpu_max("50000 100000") == 1  # half a core is still one thread
    assert parse_cpu_max("400000 100000") == 4
    assert parse_cpu_max("") is None
    assert parse_cpu_max("garbage 1") is None


def test_cpu_lists_and_siblings(tmp_path: Path) -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("") == set()
    # Four logical CPUs on two cores: 0 and 2 are siblings, 1 and 3.
    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "thread_siblings_list").write_text(siblings + "\n")
    assert physical_of({0, 1, 2, 3}, tmp_path) == 2
    assert physical_of({0, 2}, tmp_path) == 1  # two hyperthreads of one core
    assert physical_of({0, 1}, tmp_path) == 2
    assert physical_of({5}, tmp_path) == 1  # no topology file: counts alone


def test_idle_reads_only_the_allowed_cpus() -> None:
    stat = (b"cpu  10 0 10 900 100 0 0 0 0 0\n"
            b"cpu0 5 0 5 100 10 0 0 0 0 0\n"
            b"cpu1 5 0 5 800 90 0 0 0 0 0\n"
            b"intr 12345 1 2\nctxt 99\n")  # fmt: skip
    assert _idle_ticks(stat, {0}) == 110
    assert _idle_ticks(stat, {1}) == 890
    assert _idle_ticks(stat, {0, 1}) == 1000
