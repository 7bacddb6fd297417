"""A guard against a reference-count bug in PySide6 6.12.0: `SignalInstance.emit` gives back
``True`` without taking a reference to it.

Found while testing issue 11: 50 calls of ``emit()`` lower ``sys.getrefcount(True)`` by 50,
whatever the signal's arguments, connected or not (signals emitted by Qt itself, such as
``toggled``, are not affected). On Python 3.11 ``True`` is an ordinary object (3.12 made it
immortal), so after about a thousand emits its count reaches zero and the process dies with
"Fatal Python error: bool_dealloc" — in the middle of a session or at exit.

`install` holds a block of references to ``True`` when the installed PySide6 still has the bug
(`emit_leaks_true` measures it), so the count stays far from zero for a million emits (8 MB);
the block is never freed, not even at exit.
Remove this module once the pinned PySide6 no longer leaks; `tests/app/test_shortcuts.py` says
when. Owns nothing else.
"""

from __future__ import annotations

import ctypes
import sys

RESERVE = 1 << 20  # references held: one per emit the process may make before trouble
_held: list[bool] = []


def emit_leaks_true() -> bool:
    """Whether ``emit()`` loses a reference to ``True`` per call in this PySide6."""
    from PySide6.QtCore import QObject, Signal

    class Probe(QObject):
        sig_probe = Signal()

    probe = Probe()
    before = sys.getrefcount(True)
    for _ in range(16):
        probe.sig_probe.emit()
    return sys.getrefcount(True) <= before - 8


def install() -> None:
    """Hold the reserve once per process, where it is needed."""
    if _held or sys.version_info >= (3, 12) or not emit_leaks_true():
        return
    _held.extend([True] * RESERVE)
    # The block must outlive the interpreter's own clean-up too: freed at exit, it would
    # return its references while leaked ones are still owed, and True would die then.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_held))
