"""Measures the facts `app.chat.slowness.diagnose` reads, at the moment the user asks.

Owns `SlowWatch`: each `look` samples this process's resident memory and the machine's
available memory, the swap counters (in + out since the previous look: psutil's ``sin`` /
``sout``, 0 where the platform has none), the data folder's free disk space, the thread
governor's count and slowdowns (through `app.bridge.governor_reading`, passed in), and the
expected decode speed for the loaded file (`engine.hub.fit.expected_tok_s`, by its size).
Qt-free. Does not own the diagnosis (`app.chat.slowness`) or showing it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

from app.chat.slowness import SlowFacts
from engine.hub import fit
from engine.types import ModelInfo

GovernorReading = Callable[[], tuple[int, int, int] | None]  # cores, threads, slowdowns


def _swap_total() -> int:
    swap = psutil.swap_memory()
    return int(getattr(swap, "sin", 0) or 0) + int(getattr(swap, "sout", 0) or 0)


class SlowWatch:
    """Samples the machine; the swap and governor-slowdown figures are the change since the
    previous look (the first look is against the moment this watch was made)."""

    def __init__(self, data_dir: Path, governor: GovernorReading) -> None:
        self.data_dir = data_dir
        self._governor = governor
        self._swap = _swap_total()
        reading = governor()
        self._slowdowns = reading[2] if reading else 0
        self._expected: dict[str, float | None] = {}  # by model path: probing costs once

    def look(self, info: ModelInfo | None, stats: Mapping[str, object]) -> SlowFacts:
        """The facts now, for the loaded ``info`` and the last reply's ``stats``."""
        swap = _swap_total()
        swapped, self._swap = max(0, swap - self._swap), swap
        reading = self._governor()
        cores, threads, slowdowns = reading if reading else (0, 0, 0)
        new_slowdowns, self._slowdowns = max(0, slowdowns - self._slowdowns), slowdowns
        return SlowFacts(
            slow_path_reason=info.slow_path_reason if info else "",
            kernel_note=info.kernel_note if info else "",
            dropped_messages=_int(stats.get("dropped_messages")),
            rss_bytes=psutil.Process().memory_info().rss,
            available_bytes=fit.available_ram(),
            swapped_bytes=swapped,
            cores=cores,
            threads=threads,
            slowdowns=new_slowdowns,
            disk_free_bytes=self._disk_free(),
            decode_tok_s=_float(stats.get("decode_tokens_per_s")),
            expected_tok_s=self._expected_for(info),
        )

    def _disk_free(self) -> int | None:
        folder = self.data_dir
        while not folder.exists() and folder != folder.parent:  # not made yet: its disk
            folder = folder.parent
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            return None

    def _expected_for(self, info: ModelInfo | None) -> float | None:
        if info is None or info.backend == "remote" or not os.path.isfile(info.path):
            return None  # a folder or an endpoint: no weight size to estimate from
        if info.path not in self._expected:
            self._expected[info.path] = fit.expected_tok_s(os.path.getsize(info.path))[0]
        return self._expected[info.path]


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
