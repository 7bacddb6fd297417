"""What the machine says about its cores, and the thread count the last reply settled on.

Owns two small facts the decode thread governor (`engine.kernels.governor`) reads at a
reply's start, when it has no step times of its own to compare yet:
- `read_host`: this process's run-queue wait (its threads', from
  ``/proc/self/task/*/schedstat``: time runnable but not running, i.e. a core was taken), the
  machine's idle CPU time (``/proc/stat``) and the CPU time of the tasks that yield a core to
  us at once (`yields`: ``SCHED_IDLE``, or nice 10 or more above ours; Hearth's own background
  indexing is one), as a `HostSample`; `pressure` turns two samples into cores' worth of each
  over the time between them. None where ``/proc`` is not there (macOS, Windows): the
  governor then decides by step times alone.
- `ThreadMemory`: the count the governor settled on, in ``<cache>/kernels/threads.json``
  (when, on how many cores), so the next reply, runner or process starts there rather than
  on every core beside a program that is still running.
Does not own the decisions (`engine.kernels.governor`) or the cap (`engine.kernels.native`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.cpus import allowed_cpus

FRESH_S = 600.0  # a remembered count older than this is not trusted (the neighbour may be gone)


YIELD_NICE = 10  # a task this much nicer than us weighs <= 1/9 of us: it gives way at once


@dataclass(frozen=True)
class HostSample:
    """Counters at one moment: ``at`` (monotonic s), ``waited`` (s, this process's threads
    runnable but not running, summed; threads that `yields` left out), ``idle`` (s, idle CPU
    time summed over the cores), ``yielded`` (s of CPU time so far, per task or process id,
    of the tasks that yield a core to ours: a core one of them holds is ours when we ask),
    ``others`` (the same for every other process, the ones that do not yield)."""

    at: float
    waited: float
    idle: float
    yielded: Mapping[int, float] = field(default_factory=dict)
    others: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Pressure:
    """Between two samples, in cores: ``waiting`` (this process's threads that wanted a core
    and had none), ``idle`` (cores nobody used), ``yielding`` (cores used by tasks that
    give them up to ours at once) and ``taken`` (cores used by other processes that do not).
    A yielding task can leave ``waiting`` above 0 by itself: each time a thread of ours
    wakes, the core it left is the task's until the scheduler preempts it."""

    waiting: float
    idle: float
    yielding: float = 0.0
    taken: float = 0.0

    @property
    def free(self) -> float:
        """Cores another of our threads would get: idle ones and ones a yielding task holds."""
        return self.idle + self.yielding


def pressure(before: HostSample | None, after: HostSample | None) -> Pressure | None:
    """The pressure between two samples; None without both or without time between them.
    A task counts only where both samples saw it (a task that just started brings its whole
    past CPU time with it)."""
    if before is None or after is None or after.at <= before.at:
        return None
    span = after.at - before.at
    return Pressure(max(0.0, after.waited - before.waited) / span,
                    max(0.0, after.idle - before.idle) / span,
                    _grown(before.yielded, after.yielded) / span,
                    _grown(before.others, after.others) / span)  # fmt: skip


def _grown(before: Mapping[int, float], after: Mapping[int, float]) -> float:
    """CPU seconds the tasks in both samples used between them."""
    return sum(max(0.0, t - before[k]) for k, t in after.items() if k in before)


def yields(policy: int, nice: int, our_policy: int, our_nice: int) -> bool:
    """Whether a task of ``policy`` and ``nice`` gives its core to a thread of ours at once.

    ``SCHED_IDLE`` tasks run only where nothing else wants the core (a waking normal task
    preempts them); a task ``YIELD_NICE`` nicer weighs a tenth of ours or less. Neither is
    a taken core for the governor: measured on 2 cores beside Hearth's own indexing at
    ``SCHED_IDLE``, llama.cpp's two threads ran at their idle speed while the governor,
    reading the core as taken, sat on one thread (0.69x). Nothing yields to a thread that
    is itself ``SCHED_IDLE``."""
    if our_policy == os.SCHED_IDLE:
        return False
    return policy == os.SCHED_IDLE or nice >= our_nice + YIELD_NICE


def _read(path: str) -> bytes:
    """A small /proc file's bytes (os-level: a desktop has hundreds of them to read)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _read_all(path: str) -> bytes:
    """A /proc file's bytes, however long (``/proc/stat`` runs past 4 KB on many cores)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _idle_ticks(stat: bytes, cpus: set[int]) -> int:
    """Idle + iowait ticks of the CPUs in ``cpus`` only (``/proc/stat``'s ``cpuN`` lines):
    a core outside this process's affinity mask is no core another of our threads could
    take, however idle it sits (under ``taskset -c 0`` on 2 cores, the other one always)."""
    idle = 0
    for line in stat.split(b"\n"):
        if not line.startswith(b"cpu") or line[3:4] == b" ":
            continue  # the summed "cpu " line, and the non-CPU lines
        fields = line.split()
        if int(fields[0][3:]) in cpus:
            idle += int(fields[4]) + int(fields[5])
    return idle


def _policy_nice_cpu(stat: bytes) -> tuple[int, int, int]:
    """(policy, nice, utime + stime in clock ticks) from a ``/proc/.../stat`` line (the
    command name, in brackets, may hold spaces: fields are counted after its ``)``)."""
    rest = stat[stat.rindex(b")") + 2 :].split()
    return int(rest[38]), int(rest[16]), int(rest[11]) + int(rest[12])


def read_host(proc: Path = Path("/proc")) -> HostSample | None:
    """This process's and the machine's counters now, or None where /proc has no answer.

    Reads every process's ``stat`` line (a few ms on a desktop's few hundred processes),
    at a reply's start, after its first steps and before a probe. Other processes are
    judged by their main thread's policy (a process that lowers only some of its threads is
    seen as normal); this process, thread by thread."""
    try:
        ours = (os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0))
        ticks = os.sysconf("SC_CLK_TCK")
        waited = 0
        yielded: dict[int, float] = {}
        others: dict[int, float] = {}
        tasks = f"{proc}/self/task"
        for tid in os.listdir(tasks):
            try:
                policy, nice, _ = _policy_nice_cpu(_read(f"{tasks}/{tid}/stat"))
                ran, delay = _read(f"{tasks}/{tid}/schedstat").split()[:2]
            except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                continue
            if yields(policy, nice, *ours):
                yielded[int(tid)] = int(ran) / 1e9
            else:
                waited += int(delay)
        me = str(os.getpid())
        for pid in os.listdir(proc):
            if not pid.isdigit() or pid == me:
                continue
            try:
                policy, nice, cpu = _policy_nice_cpu(_read(f"{proc}/{pid}/stat"))
            except (OSError, ValueError, IndexError):  # a process that ended meanwhile
                continue
            (yielded if yields(policy, nice, *ours) else others)[int(pid)] = cpu / ticks
        idle = _idle_ticks(_read_all(f"{proc}/stat"), allowed_cpus()) / ticks
    except (OSError, ValueError, IndexError, AttributeError):  # AttributeError: no sched_*
        return None
    return HostSample(time.monotonic(), waited / 1e9, idle, yielded, others)


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
