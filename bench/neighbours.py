"""The programs `bench.contention` runs beside a contender: what a desktop keeps busy.

Owns the neighbour kinds, each a set of child processes that end with the process that
started them (a killed bench leaves nothing behind): ``idle`` (none), ``busy1`` / ``busy2``
(one or two Python loops that never sleep: a build, a busy browser tab), ``memory`` (a numpy
copy loop over 256 MB buffers: it takes a core and the memory bandwidth decode lives on) and
``embedding`` (Hearth indexing a collection: `engine.embed` on all cores, in batches of 8,
over and over, on a thread at the app's indexing priority,
`app.documents.background.yield_to_replies`) and ``embedding-normal`` (the same at normal
priority: the app before 2026-12-05). Does not own timing or the table.

``python -m bench.neighbours embedding MODEL`` is the embedding child; it prints ``ready``
once its model is open, and `running` waits for that line, so the contender starts beside a
neighbour that is already at work.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

KINDS = ("idle", "busy1", "busy2", "memory", "embedding", "embedding-normal")
TITLES = {"idle": "idle", "busy1": "1 busy", "busy2": "2 busy", "memory": "memory",
          "embedding": "embedding", "embedding-normal": "embed(nice0)"}  # fmt: skip
READY_TIMEOUT_S = 180.0  # the embedding child's model open (a first open converts the file)

# Each loop checks its parent now and then and ends with it.
_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    sum(range(10000))\n"
_MEMORY = (
    "import os\nimport numpy as np\nparent = os.getppid()\n"
    "a = np.ones(1 << 25)\nb = np.empty_like(a)\n"  # 2 x 256 MB: far past any cache
    "while os.getppid() == parent:\n    np.copyto(b, a)\n    np.copyto(a, b)\n"
)


def commands(kind: str, model: str) -> list[list[str]]:
    """The child processes of neighbour ``kind`` (``model``: the embedding child's file)."""
    if kind not in KINDS:
        raise ValueError(f"neighbour must be one of {', '.join(KINDS)}, got {kind!r}")
    python = sys.executable
    return {
        "idle": [],
        "busy1": [[python, "-c", _BUSY]],
        "busy2": [[python, "-c", _BUSY], [python, "-c", _BUSY]],
        "memory": [[python, "-c", _MEMORY]],
        "embedding": [[python, "-m", "bench.neighbours", "embedding", model]],
        "embedding-normal": [[python, "-m", "bench.neighbours", "embedding-normal", model]],
    }[kind]


@contextlib.contextmanager
def running(kind: str, model: str, settle_s: float = 1.0) -> Iterator[None]:
    """Neighbour ``kind`` at work for the ``with`` body: started, given ``settle_s`` (the
    embedding child: its ``ready`` line), then killed."""
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for cmd in commands(kind, model)
    ]
    try:
        if kind.startswith("embedding"):
            _wait_ready(procs[0])
        time.sleep(settle_s if procs else 0.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == "ready":
            return
        if not line and proc.poll() is not None:
            raise RuntimeError("the embedding neighbour ended before it was ready")
    raise RuntimeError("the embedding neighbour was not ready in time")


def _embedding_main(model: str, lowered: bool) -> None:
    """Embed the same 8 passages over and over until the parent ends (``lowered``: at the
    app's indexing priority, set before the model opens so its pool threads inherit it)."""
    import os

    from app.documents.background import yield_to_replies

    if lowered:
        yield_to_replies()
    from engine.embed.embedder import load_embedder

    embedder = load_embedder(model, max_tokens=256)
    texts = [f"Passage {i}: " + "the lighthouse keeper logs the weather each hour. " * 20
             for i in range(8)]  # fmt: skip
    embedder.embed(texts, query=False)  # warm
    print("ready", flush=True)
    parent = os.getppid()
    while os.getppid() == parent:
        embedder.embed(texts, query=False)


if __name__ == "__main__":
    if sys.argv[1:2] in (["embedding"], ["embedding-normal"]):
        _embedding_main(sys.argv[2], lowered=sys.argv[1] == "embedding")
