"""Download progress plumbing without Qt: the relay from the download thread to the event loop
(coalesced, last value always delivered, delivered on the loop's thread) and the speed / time
left meter (fed explicit times: its arithmetic, not the wall clock, is under test)."""

from __future__ import annotations

import asyncio
import threading

from app.hub.progress import RATE_WINDOW_S, ProgressRelay, RateMeter


def test_relay_delivers_on_the_loop_thread_coalesced_and_ends_on_the_last_value() -> None:
    delivered: list[tuple[int, int, int]] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        relay = ProgressRelay(loop, lambda d, t: delivered.append((d, t, threading.get_ident())))
        worker = threading.Thread(target=lambda: [relay(i, 10_000) for i in range(1, 10_001)])
        worker.start()
        await asyncio.to_thread(worker.join)
        await asyncio.sleep(0)  # the flush scheduled by the last call runs now
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert delivered[-1][:2] == (10_000, 10_000)
    assert len(delivered) < 10_000  # coalesced: never one loop callback per chunk
    assert [d for d, _t, _i in delivered] == sorted(d for d, _t, _i in delivered)
    assert {i for _d, _t, i in delivered} == {threading.get_ident()}


def test_relay_after_the_loop_closed_is_ignored() -> None:
    loop = asyncio.new_event_loop()
    relay = ProgressRelay(loop, lambda _d, _t: None)
    loop.close()
    relay(1, 2)  # the app is quitting while a download thread reports: no exception


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_meter_speed_and_time_left() -> None:
    clock = Clock()
    meter = RateMeter(clock)
    meter.add(0)
    assert meter.bytes_per_second() is None and meter.seconds_left(0, 100) is None
    for second in range(1, 4):
        clock.now += 1.0
        meter.add(second * 1_000_000)
    assert meter.bytes_per_second() == 1_000_000
    assert meter.seconds_left(3_000_000, 10_000_000) == 7.0


def test_rate_meter_follows_a_slower_connection_within_its_window() -> None:
    clock = Clock()
    meter = RateMeter(clock)
    done = 0
    for _ in range(10):  # 1 MB/s for 10 s
        meter.add(done)
        clock.now += 1.0
        done += 1_000_000
    for _ in range(int(RATE_WINDOW_S) + 2):  # then 100 kB/s
        meter.add(done)
        clock.now += 1.0
        done += 100_000
    speed = meter.bytes_per_second()
    assert speed is not None and abs(speed - 100_000) < 1
    meter.reset()
    assert meter.bytes_per_second() is None
