"""What the machine says about its cores, and the thread count the last reply settled on.

Owns two small facts the decode thread governor (`engine.kernels.governor`) reads at a
reply's start, when it has no step times of its own to compare yet:
- `read_host`: this process's run-queue wait (every thread's, from
  ``/proc/self/task/*/schedstat``: time runnable but not running, i.e. a core was taken) and
  the machine's idle CPU time (``/proc/stat``), as a `HostSample`; `pressure` turns two
  samples into cores' worth of each over the time between them. None where ``/proc`` is not
  there (macOS, Windows): the governor then decides by step times alone.
- `ThreadMemory`: the count the governor settled on, in ``<cache>/kernels/threads.json``
  (when, on how many cores), so the next reply, runner or process starts there rather than
  on every core beside a program that is still running.
Does not own the decisions (`engine.kernels.governor`) or the cap (`engine.kernels.native`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

FRESH_S = 600.0  # a remembered count older than this is not trusted (the neighbour may be gone)


@dataclass(frozen=True)
class HostSample:
    """Counters at one moment: ``at`` (monotonic s), ``waited`` (s, this process's threads
    runnable but not running, summed), ``idle`` (s, idle CPU time summed over the cores)."""

    at: float
    waited: float
    idle: float


@dataclass(frozen=True)
class Pressure:
    """Between two samples, in cores: ``waiting`` (this process's threads that wanted a core
    and had none) and ``idle`` (cores nobody used)."""

    waiting: float
    idle: float


def pressure(before: HostSample | None, after: HostSample | None) -> Pressure | None:
    """The pressure between two samples; None without both or without time between them."""
    if before is None or after is None or after.at <= before.at:
        return None
    span = after.at - before.at
    return Pressure(max(0.0, after.waited - before.waited) / span,
                    max(0.0, after.idle - before.idle) / span)  # fmt: skip


def read_host(proc: Path = Path("/proc")) -> HostSample | None:
    """This process's and the machine's counters now, or None where /proc has no answer."""
    try:
        waited = 0
        for task in (proc / "self" / "task").iterdir():
            try:
                fields = (task / "schedstat").read_text().split()
            except OSError:  # a thread that ended between the listing and the read
                continue
            waited += int(fields[1])
        cpu = (proc / "stat").read_text().split("\n", 1)[0].split()
        ticks = os.sysconf("SC_CLK_TCK")
        idle = (int(cpu[4]) + int(cpu[5])) / ticks  # idle + iowait
    except (OSError, ValueError, IndexError):
        return None
    return HostSample(time.monotonic(), waited / 1e9, idle)


class ThreadMemory:
    """The last settled thread count, kept in a small JSON file shared by processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, cores: int) -> int | None:
        """The count remembered for ``cores`` cores, if fresh (`FRESH_S`); else None."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            threads, when, for_cores = int(data["threads"]), float(data["at"]), int(data["cores"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if for_cores != cores or not 1 <= threads <= cores or time.time() - when > FRESH_S:
            return None
        return threads

    def save(self, cores: int, threads: int) -> None:
        """Remember ``threads`` (atomically: another process may read or write it now)."""
        body = json.dumps({"cores": cores, "threads": threads, "at": time.time()})
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # a read-only cache: the next start is on every core, as before
            tmp.unlink(missing_ok=True)


def default_memory() -> ThreadMemory:
    """The memory in this user's cache folder."""
    from engine.cache_folders import cache_root

    return ThreadMemory(cache_root() / "kernels" / "threads.json")
