"""The kernel's matrices read into huge-page memory (`engine.fastpath.resident`).

A decode step streams every ``HearthMatMul`` matrix once; read into one anonymous buffer
advised for huge pages instead of mapped from the file, a step walks far fewer pages. These
tests pin what must not change with it: the bytes (a span is the file's, read-only), the
logits (bit for bit those of the mapped file), and when the copy is refused (switched off,
or more than half the memory available), and that a file shorter than its tensors fails.
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.fastpath import resident
from engine.fastpath.mapped import MAPPED
from engine.fastpath.plan import kernel_enabled
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW

linux_thp = pytest.mark.skipif(
    not resident.worth_it(1), reason="no transparent huge pages here (or not Linux)"
)


@pytest.fixture
def blob(tmp_path: Path) -> tuple[Path, bytes]:
    data = np.random.default_rng(7).integers(0, 256, size=5 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    return path, data


@linux_thp
def test_spans_hold_the_file_bytes_read_only_on_a_huge_page_boundary(
    blob: tuple[Path, bytes],
) -> None:
    path, data = blob
    spans = [(0, 1000), (4097, 3 << 20), (100, 7)]  # unaligned, large, overlapping the first
    copy = resident.resident_spans(path, spans)
    assert copy is not None
    for (offset, nbytes), view in zip(spans, copy.views, strict=True):
        assert view.tobytes() == data[offset : offset + nbytes]
        assert not view.flags.writeable
        assert view.ctypes.data % 64 == 0  # each span on a cache line
    assert copy.views[0].ctypes.data % resident.HUGE == 0


def smaps_entry(address: int) -> dict[str, str]:
    """The /proc/self/smaps fields of the mapping holding ``address`` (its flags as "perms")."""
    entry: dict[str, str] = {}
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and ":" not in head[0]:  # a mapping's first line: range, perms, ...
            low, high = (int(part, 16) for part in head[0].split("-"))
            if inside:
                break
            inside = low <= address < high
            if inside:
                entry["perms"] = head[1]
        elif inside and head[0].endswith(":"):
            entry[head[0][:-1]] = head[1]
    return entry


@linux_thp
def test_the_buffer_is_private_memory_the_kernel_may_back_with_huge_pages(
    blob: tuple[Path, bytes],
) -> None:
    # mmap's default anonymous mapping is shared (shmem), whose huge pages follow
    # shmem_enabled ("never" by default) and ignore MADV_HUGEPAGE: the buffer then stayed in
    # 4 KiB pages however it was advised.
    path, _ = blob
    copy = resident.resident_spans(path, [(0, 3 << 20)])
    assert copy is not None
    entry = smaps_entry(copy.views[0].ctypes.data)
    assert entry["perms"].endswith("p"), entry  # private, not shared
    assert entry.get("THPeligible", "1") == "1", entry  # the field is in Linux >= 5.0's smaps


@linux_thp
def test_a_span_past_the_end_of_the_file_is_an_error(blob: tuple[Path, bytes]) -> None:
    path, data = blob
    with pytest.raises(OSError, match="ends"):
        resident.resident_spans(path, [(len(data) - 10, 20)])


def test_switched_off_or_too_big_stays_mapped(
    blob: tuple[Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = blob
    monkeypatch.setenv("HEARTH_RESIDENT_WEIGHTS", "0")
    assert resident.resident_spans(path, [(0, 100)]) is None
    monkeypatch.delenv("HEARTH_RESIDENT_WEIGHTS")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000 kB\nMemAvailable:     400 kB\n")
    monkeypatch.setattr(resident, "MEMINFO", meminfo)
    assert resident.available_bytes() == 400 * 1024
    assert not resident.worth_it(200 * 1024 + 1)  # more than half of what is available
    meminfo.write_text("MemTotal: 1000 kB\n")  # no MemAvailable line: do not guess
    assert resident.available_bytes() is None and not resident.worth_it(1)


@linux_thp
@pytest.mark.skipif(not kernel_enabled(), reason="the kernel is not built here")
def test_resident_matrices_give_the_mapped_files_logits(
    every_matrix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = every_matrix / "qwen2-Q4_K_M.gguf"
    write_tiny_model(path, "qwen2", "Q4_K_M")
    logits = {}
    for mode in ("mapped", "resident"):
        if mode == "mapped":
            monkeypatch.setenv("HEARTH_RESIDENT_WEIGHTS", "0")
        else:
            monkeypatch.delenv("HEARTH_RESIDENT_WEIGHTS")
        runner = build_fast_runner(path, accuracy=4, window=WINDOW)
        assert runner is not None and runner._matrices is not None
        (key,) = MAPPED.keys("matrices")
        table = MAPPED.table("matrices", key)
        on_file = [isinstance(m.data, np.memmap) for m in table.values()]
        assert all(on_file) if mode == "mapped" else not any(on_file)
        logits[mode] = runner.extend(PROMPT, last_only=False)
        del runner, table
        gc.collect()  # the registry lets the file's table go with its last runner
    np.testing.assert_array_equal(logits["mapped"], logits["resident"])
