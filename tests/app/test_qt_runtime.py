"""The pinned PySide6 keeps Python's own objects alive: a long reply emits tens of thousands of
signals, and PySide6 6.12.0 lost a reference to ``True`` per ``emit()``, which killed the process
after about a thousand ("Fatal Python error: bool_dealloc" on Python 3.11)."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys
from PySide6.QtCore import QObject, Signal

class Relay(QObject):
    sig_text = Signal(str)
    sig_none = Signal()

relay = Relay()
seen = []
relay.sig_text.connect(seen.append)
before = sys.getrefcount(True)
for i in range(20000):
    relay.sig_text.emit("delta")
    relay.sig_none.emit()
print(sys.getrefcount(True) - before, len(seen))
"""


def test_emitting_many_signals_neither_leaks_nor_frees_true() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]  # 6.12.0: aborts with bool_dealloc
    drift, delivered = map(int, done.stdout.split())
    assert delivered == 20000 and abs(drift) < 100
