"""`python -m bench ui`: how smooth the GUI stays while a reply streams.

Builds the real window, session, bridge and engine, opens a conversation with a long history
(500 messages by default, so the virtualised view is exercised), streams one reply and
measures on the GUI thread:

- event-loop stall: a QTimer firing every 5 ms records how late each tick is; the maximum is
  the longest time the GUI could not react (the issue's bar is 50 ms);
- tokens painted per second: completion tokens divided by the time from the first to the last
  repaint of the chat that showed new text (what the user sees, not what the engine makes);
- repaints per second of the transcript.

Prints a short report, or one JSON object with ``--json``. Model load time is not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QElapsedTimer, QEvent, QObject, QTimer

TICK_MS = 5


class StallMeter(QObject):
    """Counts how late a 5 ms timer fires: lateness = time the event loop was blocked."""

    def __init__(self) -> None:
        super().__init__()
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        self.stalls_ms: list[float] = []
        self.at: list[float] = []  # perf_counter() of each sample, to split phases
        self._last = 0.0

    def start(self) -> None:
        self._clock.start()
        self._last = 0.0
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _on_timer_timeout(self) -> None:
        now = self._clock.nsecsElapsed() / 1e6
        self.stalls_ms.append(max(0.0, now - self._last - TICK_MS))
        self.at.append(time.perf_counter())
        self._last = now

    def worst(self, start: float = 0.0, end: float = float("inf")) -> float:
        inside = [s for s, t in zip(self.stalls_ms, self.at, strict=True) if start <= t <= end]
        return round(max(inside, default=0.0), 1)


class PaintCounter(QObject):
    """Counts paint events of the chat viewport while the reply's text grows."""

    def __init__(self, session: Any) -> None:
        super().__init__()
        self.session = session
        self.paints: list[float] = []
        self._seen = ""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        model = self.session.messages
        if event.type() == QEvent.Type.Paint and model.rowCount():
            last = model.item(model.rowCount() - 1)
            # Only paints that show more of the reply count (not the user's turn appearing).
            if (
                last.record.role == "assistant"
                and last.record.content
                and last.record.content != self._seen
            ):
                self._seen = last.record.content
                self.paints.append(time.perf_counter())
        return False


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    import qasync

    from app.__main__ import make_qapp

    qapp = make_qapp()
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    with loop:
        figures = loop.run_until_complete(_bench(qapp, args))
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>24}: {value}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench ui", description=__doc__)
    p.add_argument("--model", default="bundled", help='"bundled", a model folder or a .gguf')
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--history", type=int, default=500, help="messages already in the chat")
    p.add_argument("--prompt", default="Write a short story about a lighthouse keeper.")
    p.add_argument("--json", action="store_true")
    return p


async def _bench(qapp: Any, args: argparse.Namespace) -> dict[str, Any]:
    from app.application import Application
    from app.system.settings import Settings
    from engine.types import SamplingParams

    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
        hearth = Application(qapp, Settings(str(Path(tmp) / "s.ini")))
        hearth.window.resize(1280, 820)
        hearth.window.show()
        await hearth.start(db_path=Path(tmp) / "bench.sqlite3", model=None)
        if await hearth.load(args.model) is None:
            print(f"could not load {args.model!r}", file=sys.stderr)
            return {}
        open_stall = await _fill_history(hearth, args.history)
        hearth.apply_params(SamplingParams(temperature=0.7, seed=1, max_new_tokens=args.max_tokens))
        figures = await _measure(hearth, args.prompt)
        figures["open_chat_max_stall_ms"] = open_stall
        await hearth.session.close()
        hearth.db.close_blocking()
    return figures


async def _fill_history(hearth: Any, count: int) -> float:
    """Write ``count`` messages into a chat and open it; return the worst stall while opening."""
    from app.store import Store

    def write(store: Store) -> str:
        conv = store.create_conversation("Benchmark history")
        parent = None
        with store.transaction():
            for i in range(count):
                role = "user" if i % 2 == 0 else "assistant"
                text = f"Message {i}: **bold**, `code`, 中文 text." + (
                    "\n\n```py\nx = 1\n```" if i % 10 == 9 else ""
                )
                parent = store.add_message(conv.id, parent, role, text).id
        return conv.id

    if not count:
        return 0.0
    conv_id = await hearth.db.call(write)
    meter = StallMeter()
    meter.start()
    await hearth.session.open_conversation(conv_id)
    await asyncio.sleep(0.5)  # the first (batched) layout of the long transcript
    meter.stop()
    return round(max(meter.stalls_ms, default=0.0), 1)


async def _measure(hearth: Any, prompt: str) -> dict[str, Any]:
    session = hearth.session
    meter, painter = StallMeter(), PaintCounter(session)
    hearth.window.chat.viewport().installEventFilter(painter)
    meter.start()
    started = time.perf_counter()
    await session.send(prompt)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.1)  # the last coalesced repaint
    meter.stop()
    reply = session.messages.item(session.messages.rowCount() - 1)
    stats = reply.record.stats or {}
    tokens = int(stats.get("completion_tokens", 0))
    # From the first painted text to the last: the reply as the user watches it appear.
    span = painter.paints[-1] - painter.paints[0] if len(painter.paints) > 1 else elapsed
    stalls = sorted(meter.stalls_ms)
    first_paint = painter.paints[0] if painter.paints else float("inf")
    return {
        "model": session.model_info.name if session.model_info else "",
        "history_messages": session.messages.rowCount() - 2,
        "tokens": tokens,
        "max_stall_ms": round(stalls[-1], 1) if stalls else 0.0,
        "p99_stall_ms": round(stalls[int(len(stalls) * 0.99)], 1) if stalls else 0.0,
        # Before the first token the engine prepares the prompt (template + tokenizer on its
        # thread, competing for the GIL); after it, stalls are the GUI's own painting.
        "max_stall_before_first_token_ms": meter.worst(end=first_paint),
        "max_stall_while_streaming_ms": meter.worst(start=first_paint),
        "tokens_painted_per_s": round(tokens / span, 1) if span > 0 else 0.0,
        "repaints_per_s": round(len(painter.paints) / span, 1) if span > 0 else 0.0,
        "engine_decode_tokens_per_s": round(float(stats.get("decode_tokens_per_s", 0.0)), 1),
        "ttft_s": round(float(stats.get("ttft_s", 0.0)), 3),
    }
