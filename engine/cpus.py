"""The cores this process may run on: the one thread count every part of the engine starts from.

Owns `usable_cores` (physical cores in this process's CPU affinity mask, capped by a cgroup v2
``cpu.max`` quota), `allowed_cpus` (the logical CPUs of the mask, which the governor's idle
reading of ``/proc/stat`` is limited to) and the two small parsers behind them
(`parse_cpu_max`, `parse_cpu_list`). Does not own what a caller does with the count (the
kernel's pool, ONNX Runtime's intra-op threads, torch) or the decode governor's policy
(`engine.kernels.governor`).

Why: ``os.cpu_count()`` and ``psutil.cpu_count(logical=False)`` count the machine, not what
this process may use. Under ``taskset -c 0``, a container's cpuset or a Flatpak / Docker /
``systemd-run -p CPUQuota`` quota, starting a thread per machine core means threads that
wait for each other's slice at every barrier of the kernel's pool, its worst case.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

_SYS_CPU = Path("/sys/devices/system/cpu")
_CGROUP = Path("/sys/fs/cgroup")


def parse_cpu_list(text: str) -> set[int]:
    """CPU numbers from a kernel list such as ``"0-3,8,10-11"`` (``thread_siblings_list``,
    ``cpuset.cpus``); an empty or malformed list gives an empty set."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            return set()
        cpus.update(range(first, last + 1))
    return cpus


def parse_cpu_max(text: str) -> int | None:
    """The cores a cgroup v2 ``cpu.max`` line allows (``"150000 100000"``: quota over period,
    rounded up, so 1.5 cores -> 2); None for ``"max ..."`` (no quota) or a line not understood."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100_000
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def allowed_cpus() -> set[int]:
    """The logical CPUs this process may run on (its affinity mask; every CPU where the
    platform has no mask, e.g. macOS)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def physical_of(cpus: set[int], sys_cpu: Path = _SYS_CPU) -> int:
    """How many physical cores the logical ``cpus`` sit on: hyperthread siblings (from
    ``cpuN/topology/thread_siblings_list``) count once; a CPU without that file counts alone."""
    cores: set[frozenset[int]] = set()
    for cpu in cpus:
        try:
            text = (sys_cpu / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()
        except OSError:
            text = ""
        siblings = parse_cpu_list(text) or {cpu}
        cores.add(frozenset(siblings & cpus) or frozenset({cpu}))
    return max(1, len(cores))


def cgroup_quota(root: Path = _CGROUP) -> int | None:
    """The cores this process's cgroup v2 ``cpu.max`` allows (walking up to the root, the
    tightest quota wins); None where there is none or cgroup v2 is not mounted."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    path = next((entry[3:] for entry in line if entry.startswith("0::")), None)
    if path is None:
        return None
    quota: int | None = None
    here = root / path.lstrip("/")
    while True:
        try:
            cores = parse_cpu_max((here / "cpu.max").read_text())
        except OSError:
            cores = None
        if cores is not None:
            quota = cores if quota is None else min(quota, cores)
        if here == root or root not in here.parents:
            return quota
        here = here.parent


@functools.cache
def usable_cores() -> int:
    """Physical cores in the affinity mask, capped by a cgroup quota; at least 1. Asked once
    per process (it reads /sys; a mask set later by the caller is not seen)."""
    cores = physical_of(allowed_cpus())
    quota = cgroup_quota()
    return max(1, min(cores, quota) if quota is not None else cores)


def usable_logical() -> int:
    """Logical CPUs in the affinity mask, capped by a cgroup quota (for work that uses every
    hardware thread, e.g. repacking); at least 1."""
    cpus = len(allowed_cpus())
    quota = cgroup_quota()
    return max(1, min(cpus, quota) if quota is not None else cpus)
