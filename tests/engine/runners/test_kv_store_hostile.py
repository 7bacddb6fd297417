"""Saved KV caches that fail to write or lie in their header (issue 34, A10).

A write that fails part-way (here a real EFBIG from a file-size limit, in a child process) must
not leave its temporary file; one a crashed process left behind is deleted with the next write;
a header asking for a terabyte is refused by the file's size before anything is allocated.
"""

from __future__ import annotations

import json
import resource
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from engine.runners.kv_store import FORMAT, MAGIC, SUFFIX, TMP_SUFFIX, KVStore, SavedState

KEY = {"model": "m", "template": "t", "runner": "r"}


def _state(n: int = 1000) -> SavedState:
    return SavedState(list(range(16)), [np.arange(n, dtype=np.float32)], {"layers": 1})


def test_a_write_that_fails_part_way_leaves_no_temporary_file(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import resource, signal, numpy as np
        from pathlib import Path
        from engine.runners.kv_store import KVStore, SavedState
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        store = KVStore(Path({str(tmp_path)!r}), {KEY!r}, 2**30)
        store.save("chat", SavedState(list(range(16)), [np.zeros(100_000, np.float32)], {{}}))
        store.flush()
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "could not save" in done.stderr  # the failure was real and reported
    assert list(tmp_path.iterdir()) == []  # neither the .tmp nor a half .hkv


def test_a_crashed_writers_temporary_file_is_deleted_by_the_next_write(tmp_path: Path) -> None:
    stale = tmp_path / f"deadbeef{TMP_SUFFIX}"
    stale.write_bytes(b"\0" * 50_000)
    store = KVStore(tmp_path, KEY, 2**30)
    store.save("chat", _state())
    store.flush()
    assert not stale.exists()
    assert store.path_for("chat").is_file()


def test_a_header_asking_for_a_terabyte_is_refused_without_allocating(tmp_path: Path) -> None:
    store = KVStore(tmp_path, KEY, 2**30)
    header = {"key": KEY, "ids": [1, 2], "layout": {}, "arrays": [[[2**40], "|u1"]], "crc32": 0}
    blob = json.dumps(header).encode()
    path = store.path_for("chat")
    path.write_bytes(MAGIC + struct.pack("<II", FORMAT, len(blob)) + blob + b"\0" * 64)
    limit = resource.getrlimit(resource.RLIMIT_AS)
    started = time.perf_counter()
    assert store.load("chat") is None
    assert time.perf_counter() - started < 5 and limit == resource.getrlimit(resource.RLIMIT_AS)
    assert not path.exists()  # deleted: the chat does not fail again at every reopen


def test_a_header_with_an_object_dtype_is_refused(tmp_path: Path) -> None:
    store = KVStore(tmp_path, KEY, 2**30)
    header = {"key": KEY, "ids": [1], "layout": {}, "arrays": [[[1], "|O"]], "crc32": 0}
    blob = json.dumps(header).encode()
    store.path_for("chat").write_bytes(
        MAGIC + struct.pack("<II", FORMAT, len(blob)) + blob + b"\0" * 8
    )
    assert store.load("chat") is None and not list(tmp_path.glob(f"*{SUFFIX}"))


def test_a_good_file_still_round_trips(tmp_path: Path) -> None:
    store = KVStore(tmp_path, KEY, 2**30)
    store.save("chat", _state())
    loaded = store.load("chat")
    assert loaded is not None and np.array_equal(loaded.arrays[0], _state().arrays[0])
