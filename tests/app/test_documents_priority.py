"""The indexing worker runs at idle priority, so a streaming reply gets the cores first."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from app.documents.background import CollectionIndexer, yield_to_replies

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_IDLE")


@linux_only
def test_yield_to_replies_lowers_only_the_calling_thread_and_its_children() -> None:
    seen: dict[str, int] = {}

    def worker() -> None:
        yield_to_replies()
        seen["worker"] = os.sched_getscheduler(0)
        child = threading.Thread(target=lambda: seen.__setitem__("child", os.sched_getscheduler(0)))
        child.start()
        child.join()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"worker": os.SCHED_IDLE, "child": os.SCHED_IDLE}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the caller (the app's GUI) untouched


@linux_only
def test_the_indexer_worker_runs_at_idle_priority(tmp_path: Path) -> None:
    indexer = CollectionIndexer(tmp_path / "index.sqlite")
    try:
        policy = indexer._executor.submit(os.sched_getscheduler, 0).result(timeout=10)
    finally:
        indexer.close()
    assert policy == os.SCHED_IDLE
