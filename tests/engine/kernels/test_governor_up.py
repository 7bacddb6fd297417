"""The governor's timed probe back up (`engine.kernels.governor.UP_FIRST_INTERVAL`).

Beside a busy program the machine's counters show no idle core (the neighbour holds it), so
a probe of one thread more that asks them is skipped as lost, and a governor settled on one
thread stayed there for good, though with the kernel's pool two threads often win beside a
busy process. Replayed on simulated time (no timed assertion):
- a reply that starts at a remembered single thread beside a busy program where two threads
  are faster goes back to two within its first ~40 steps (before the change: never);
- where two threads lose, the probes back off (32, 64, 128, 256 steps, then every 256) and
  each costs one step;
- an idle machine at every core never runs a probe step (nothing above every core to try).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from engine.kernels.governor import UP_MAX_INTERVAL
from engine.kernels.pressure import ThreadMemory
from tests.engine.support.governor_replay import ReplayedGovernor

# threads → (step seconds, our threads' waiting cores, idle cores), beside one busy process
POOL_WINS = {2: (0.020, 0.10, 0.0), 1: (0.030, 0.0, 0.0)}  # the pool's two threads win
ONE_WINS = {2: (0.100, 0.70, 0.0), 1: (0.028, 0.0, 0.0)}  # the old barrier-bound kernel
IDLE = {2: (0.017, 0.02, 0.05), 1: (0.030, 0.0, 1.0)}


class _Replay(ReplayedGovernor):
    def __init__(
        self, machine: dict[int, tuple[float, float, float]], memory: ThreadMemory | None = None
    ) -> None:
        super().__init__(machine.__getitem__, memory)


def _remembering_one(tmp_path: Path) -> ThreadMemory:
    memory = ThreadMemory(tmp_path / "threads.json")
    memory.save(2, 1)
    return memory


def test_a_reply_at_one_thread_goes_back_to_two_where_two_win(tmp_path: Path) -> None:
    replay = _Replay(POOL_WINS, _remembering_one(tmp_path))
    used = replay.reply(128)
    assert used[0] == 1  # started where the last reply settled
    assert used.index(2) <= 40  # the timed probe up, though the counters show no idle core
    assert replay.g.current == 2 and used[-20:] == [2] * 20


def test_where_one_thread_wins_the_probes_up_back_off_and_cost_a_step_each(tmp_path: Path) -> None:
    replay = _Replay(ONE_WINS, _remembering_one(tmp_path))
    used = replay.reply(2000)
    assert replay.g.current == 1
    ups = [i for i, t in enumerate(used) if t == 2]
    gaps = [b - a for a, b in itertools.pairwise(ups)]
    assert all(b >= a for a, b in itertools.pairwise(gaps))  # backing off
    assert max(gaps) <= UP_MAX_INTERVAL + 4  # ... to a bound: a freed core is still found
    assert len(ups) <= 2000 // UP_MAX_INTERVAL + 4  # one step lost per probe


def test_an_idle_machine_at_every_core_runs_no_probe_step() -> None:
    replay = _Replay(IDLE)
    assert replay.reply(2000) == [2] * 2000
