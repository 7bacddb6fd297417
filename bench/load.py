"""Background load for a bench run: what a user's machine does beside the model.

Owns `background_load(kind)`, a context manager that starts one load process before the
measured block and ends it after: ``busy`` (a pure-Python busy loop: one core taken, no
memory traffic) or ``memory`` (one thread copying a 256 MiB buffer into another, over and
over: memory bandwidth taken, as a browser, a build or another model does). Used by
``python -m bench open --load KIND`` so a figure "under load" can be taken again the same way.
Does not own any measurement.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOADS = ("busy", "memory")
_CODE = {
    "busy": "while True:\n    pass\n",
    # 2 x 256 MiB, far beyond any cache: each copy streams 512 MiB through the memory bus.
    "memory": (
        "import numpy as np\n"
        "a = np.ones(32 << 20)\n"
        "b = np.empty_like(a)\n"
        "while True:\n"
        "    np.copyto(b, a)\n"
    ),
}


@contextmanager
def background_load(kind: str | None) -> Iterator[str]:
    """Run the ``kind`` load (see the module docstring) while the block runs; None: no load.

    Yields a label for the report ("none", "busy (pid N)", ...). The process is ended (and
    waited for) however the block ends.
    """
    if kind is None:
        yield "none"
        return
    if kind not in _CODE:
        raise ValueError(f"load must be one of {LOADS}, got {kind!r}")
    proc = subprocess.Popen([sys.executable, "-c", _CODE[kind]], stdin=subprocess.DEVNULL)
    try:
        yield f"{kind} (one process, pid {proc.pid})"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
