"""A decode thread governor driven on a replayed machine, on simulated time.

The governor tests describe a machine as the cost of one step at each thread count (step
seconds, our threads' waiting cores, idle cores, and optionally the cores a yielding task,
`YIELDER`, held); `ReplayedGovernor` runs replies on it and feeds the governor the counters
`engine.kernels.pressure` would read. No real time passes.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.kernels.governor import REPLY_GAP_S, ThreadGovernor
from engine.kernels.pressure import HostSample, ThreadMemory

StepCost = Callable[[int], tuple[float, ...]]  # (seconds, waiting, idle[, yielding cores])
YIELDER = 4242  # the yielding task's process id in the replayed samples


class ReplayedGovernor:
    """A `ThreadGovernor` whose steps cost what ``cost(threads)`` says."""

    def __init__(self, cost: StepCost, memory: ThreadMemory | None = None, cores: int = 2) -> None:
        self.cost = cost
        self.now, self.waited, self.idle, self.yielded = 100.0, 0.0, 0.0, 0.0
        self.g = ThreadGovernor(cores, lambda _t: None, clock=lambda: self.now,
                                host=self.sample, memory=memory)  # fmt: skip

    def sample(self) -> HostSample:
        return HostSample(self.now, self.waited, self.idle, {YIELDER: self.yielded})

    def reply(self, tokens: int) -> list[int]:
        """One reply after a pause: the threads each of its steps ran with."""
        self.now += 2 * REPLY_GAP_S
        used = []
        for _ in range(tokens):
            self.g.before_step()
            threads = self.g.step_threads
            seconds, waiting, idle, *yielding = self.cost(threads)
            self.now += seconds
            self.waited += waiting * seconds
            self.idle += idle * seconds
            self.yielded += sum(yielding) * seconds
            self.g.record(seconds)
            used.append(threads)
        return used
