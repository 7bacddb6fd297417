"""How a fast-path ONNX Runtime session uses the CPU: threads, spinning and the thread governor.

Owns `cpu_session_options` (the settings every fast-path graph runs with, chat and embedding),
`spinning_pays` (whether ORT's workers spin between ops or sleep), `thread_governor` (the
decode-thread governor for graphs whose kernel ops run natively) and `physical_cores` (the
thread count everyone, peers in the benchmarks included, starts from). Does not own the
session itself (`engine.runners.onnx_runner`) or the governor's policy (`engine.kernels`).
"""

from __future__ import annotations

import os
from typing import Any

from engine import settings
from engine.cpus import usable_cores
from engine.kernels import governor as kernel_governor
from engine.kernels import native


def thread_governor(
    kernel_ops: str | None, threads: int | None
) -> kernel_governor.ThreadGovernor | None:
    """A thread governor for a graph whose kernel ops run natively (`engine.kernels.governor`);
    None for others (ONNX Runtime's own pool hands unstarted work back, so it needs none)."""

    if kernel_ops != "native":
        return None
    if not kernel_governor.enabled():
        native.set_thread_cap(0)  # every thread, whatever an earlier runner left set
        native.set_pool_spin(kernel_governor.SPIN_US)  # and the pool's own spin
        return None
    from engine.kernels import pressure

    return kernel_governor.ThreadGovernor(
        native.kernel_threads(threads),
        native.set_thread_cap,
        host=pressure.read_host,  # a reply's first steps read the machine's counters
        memory=pressure.default_memory(),  # and start where the last reply settled
        spin=native.set_pool_spin,  # and hold the cores beside a task that yields them
    )


def cpu_session_options(ort: Any, threads: int | None, kernel_ops: bool = False) -> Any:
    """The CPU session settings every fast-path graph runs with (chat and embedding graphs):
    ``threads`` intra-op threads (physical cores when None), one inter-op thread, spinning only
    when it pays (`spinning_pays`; never beside ``kernel_ops``, whose own threads need the
    cores the spinning ones would hold), every graph optimisation."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or physical_cores()
    options.inter_op_num_threads = 1
    spin = "1" if spinning_pays(options.intra_op_num_threads, kernel_ops) else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    # Not "session.prepack.enable_parallel": on a 0.5B qwen2 here it raised the open's peak
    # RSS by 324 MB (855 -> 1,179 MB) for no reliable gain in time (2.9-7.4 s either way).
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def spinning_pays(threads: int, kernel_ops: bool = False) -> bool:
    """Whether worker threads should spin between ops (ORT's default) or sleep.

    Spinning saves a wake-up per op on an idle machine, but when the cores are oversubscribed
    a spinning thread waits for a descheduled peer: measured here with load ~8 on 2 cores,
    2 spinning threads gave 6 tok/s, 2 sleeping threads 12-22. Beside our kernel ops
    (`engine.fastpath.expert_op`, `.matmul_op`) a spinning worker holds a core the kernel's
    OpenMP thread needs: the 0.5B file with its MLPs on the kernel decoded 13.9 tok/s spinning,
    24.0 sleeping (load 1.3). HEARTH_ORT_SPIN=0/1 overrides.
    """
    forced = settings.ORT_SPIN.raw()
    if forced in ("0", "1"):
        return forced == "1"
    if kernel_ops:
        return False
    if threads < 2:
        return True
    return os.getloadavg()[0] < max(1, usable_cores() - 0.5)


def physical_cores() -> int:
    """The cores this process may use (`engine.cpus.usable_cores`: affinity mask, cgroup quota)."""
    return usable_cores()
