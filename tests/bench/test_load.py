"""`bench.load.background_load`: the load process runs during the block and is gone after it.

Real processes, no timing assertions: the memory load must hold its two buffers (RSS well
above an idle interpreter's) while the block runs, and each load ends with the block, even
when the block raises.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bench.load import LOADS, background_load


def _pid(label: str) -> int:
    return int(label.rsplit("pid ", 1)[1].rstrip(")"))


def _rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_memory_load_holds_its_buffers_and_ends_with_the_block() -> None:
    with background_load("memory") as label:
        pid = _pid(label)
        deadline = time.monotonic() + 60  # a wait for the child to allocate, not a timing check
        while _rss_mb(pid) < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _rss_mb(pid) >= 400, label
    assert _gone(pid)


def test_busy_load_ends_even_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), background_load("busy") as label:
        pid = _pid(label)
        assert not _gone(pid) and label.startswith("busy")
        raise RuntimeError("the measured block failed")
    assert _gone(pid)


def test_no_load_and_an_unknown_one() -> None:
    with background_load(None) as label:
        assert label == "none"
    with pytest.raises(ValueError, match="busy"), background_load("disk"):
        pass
    assert LOADS == ("busy", "memory")
