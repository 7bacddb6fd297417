"""A reply's first steps under the decode thread governor (`engine.kernels.governor`).

Driven by a machine replayed on simulated time: the step times measured for the issue on a
real 0.5B qwen2 (2 cores; idle: 17 ms a step on two threads, 30 on one; beside one busy
process: 100 ms on two, 28 on one) and the counters `engine.kernels.pressure` reads over
them (our threads' run-queue wait, the machine's idle cores). A reply that STARTS beside a
busy program moves to one thread within its first handful of steps; an idle machine at
every core never probes in a 128-token reply; a remembered count is where the next reply,
runner or process starts, and a remembered one thread goes back to two at once when the
machine is idle. Also the pure decision (`early_probe`), the memory file's freshness and the
real counters on this machine. No timed assertion: every time here is simulated.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from engine.kernels.governor import REPLY_GAP_S, early_probe
from engine.kernels.pressure import HostSample, Pressure, ThreadMemory, pressure, read_host
from tests.engine.support.governor_replay import ReplayedGovernor

# (threads, busy neighbour) → (step seconds, our threads' waiting cores, idle cores)
MACHINE = {
    (2, False): (0.017, 0.02, 0.05),
    (1, False): (0.030, 0.00, 1.00),
    (2, True): (0.100, 0.70, 0.00),
    (1, True): (0.028, 0.00, 0.00),
}


class _Replay(ReplayedGovernor):
    """A governor on the replayed machine; ``busy`` says whether a neighbour runs now."""

    def __init__(self, memory: ThreadMemory | None = None, cores: int = 2) -> None:
        self.busy = False
        super().__init__(lambda threads: MACHINE[(threads, self.busy)], memory, cores)


def test_the_decision_reads_waiting_as_a_taken_core_and_idle_as_a_free_one() -> None:
    assert early_probe(2, 2, Pressure(waiting=0.7, idle=0.0)) == 1
    assert early_probe(2, 2, Pressure(waiting=0.02, idle=0.05)) is None  # idle, all cores
    assert early_probe(1, 2, Pressure(waiting=0.0, idle=1.0)) == 2  # a core sits free
    assert early_probe(1, 2, Pressure(waiting=0.0, idle=0.0)) is None  # the neighbour has it
    assert early_probe(1, 1, Pressure(waiting=0.9, idle=0.0)) is None  # nothing to drop
    assert early_probe(2, 2, None) is None  # no counters: the timed probes decide


def test_a_reply_that_starts_beside_a_busy_program_moves_to_one_thread_at_once() -> None:
    replay = _Replay()
    replay.busy = True
    used = replay.reply(128)
    assert replay.g.current == 1
    assert used.index(1) <= 4 and used[8:].count(2) <= 2  # the odd probe back up only
    seconds = sum(MACHINE[(t, True)][0] for t in used)
    assert 128 / seconds > 30  # ~35 tok/s, where two threads throughout made 10


def test_an_idle_machine_at_every_core_loses_nothing_at_a_reply_start() -> None:
    replay = _Replay()
    for _ in range(5):  # five replies, each after a pause
        assert replay.reply(128) == [2] * 128


def test_the_next_process_starts_where_the_last_settled(tmp_path: Path) -> None:
    memory = ThreadMemory(tmp_path / "threads.json")
    first = _Replay(memory)
    first.busy = True
    first.reply(32)
    assert memory.load(2) == 1
    second = _Replay(ThreadMemory(tmp_path / "threads.json"))  # another process
    second.busy = True
    assert second.reply(128)[:8] == [1] * 8  # no step at two threads beside the neighbour


def test_a_remembered_single_thread_on_a_machine_now_idle_goes_back_to_two(
    tmp_path: Path,
) -> None:
    memory = ThreadMemory(tmp_path / "threads.json")
    memory.save(2, 1)
    replay = _Replay(memory)
    used = replay.reply(128)
    assert used[:3] == [1, 1, 1] and used[3] == 2 and used[8:] == [2] * 120
    assert memory.load(2) == 2  # and says so to the next one


def test_the_next_reply_of_the_same_runner_starts_at_its_settled_count() -> None:
    replay = _Replay()
    replay.busy = True
    replay.reply(64)
    assert replay.reply(16)[:4] == [1, 1, 1, 1]
    replay.busy = False  # the neighbour ended while the user read the reply
    assert replay.reply(32)[3:] == [2] * 29


def test_a_stale_or_foreign_memory_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "threads.json"
    memory = ThreadMemory(path)
    memory.save(2, 1)
    assert memory.load(4) is None  # written on a machine with other cores
    path.write_text(json.dumps({"cores": 2, "threads": 1, "at": time.time() - 3600}))
    assert memory.load(2) is None
    path.write_text("{not json")
    assert memory.load(2) is None
    path.write_text(json.dumps({"cores": 2, "threads": 9, "at": time.time()}))
    assert memory.load(2) is None
    ThreadMemory(tmp_path / "missing" / "deep" / "t.json").save(2, 1)  # folders made


def test_pressure_is_cores_worth_over_the_span() -> None:
    seen = pressure(HostSample(10.0, 1.0, 5.0), HostSample(10.5, 1.25, 5.5))
    assert seen == Pressure(waiting=0.5, idle=1.0)
    assert pressure(None, HostSample(1.0, 0.0, 0.0)) is None
    assert pressure(HostSample(1.0, 0.0, 0.0), HostSample(1.0, 0.0, 0.0)) is None


def test_the_counters_are_read_from_this_machine() -> None:
    if not Path("/proc/self/task").is_dir():
        assert read_host() is None
        return
    before = read_host()
    sum(range(200_000))
    after = read_host()
    assert before is not None and after is not None
    assert after.at > before.at and after.waited >= before.waited >= 0
    assert after.idle >= before.idle
    assert read_host(Path(os.devnull)) is None  # no /proc there: no counters, no error


def test_with_counters_a_steady_machine_pays_no_probe_and_a_later_neighbour_is_caught() -> None:
    replay = _Replay()
    assert replay.reply(2000) == [2] * 2000  # idle: every fewer-threads probe skipped
    replay.busy = True
    replay.now -= 2 * REPLY_GAP_S  # no pause: the neighbour starts mid-reply
    used = replay.reply(400)
    assert used.index(1) <= 6  # the step times' slowdown probes without asking the counters
    # Probes back up: the counter-checked ones are skipped while it runs; the timed ones
    # (`UP_FIRST_INTERVAL`, doubling) each lose at their first step: 32 + 64 + 128 + 256 steps.
    assert used[10:].count(2) <= 3
