"""`python -m bench hostile-headers`: what a header claiming 10^6 tensors costs each reader.

Writes a GGUF (under the system temp dir, removed after) whose header lists ``--tensors``
one-element F32 tensors (~40 MB for 10^6), then times each reader on it, with its peak traced
Python memory and how it ended: Hearth's summary parser (`engine.gguf.header`, behind
`inspect`, `models` and the Models window), Hearth's full reader (`engine.gguf.reader`, at
load) and, with ``--gguf-py``, gguf-py's ``GGUFReader`` (the peer; minutes and GBs at 10^6).
Before issue 22 A7/A20 the summary parser read all 10^6 entries (5.4-7.7 s) and the load path
reached 4.6 GB; now both refuse from the counts. ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import struct
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_many_tensors(path: Path, n: int) -> int:
    """A GGUF v3 header listing ``n`` tensors of one F32 each, then their data."""
    arch = b"general.architecture"
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 1))
    out += struct.pack("<Q", len(arch)) + arch + struct.pack("<IQ", 8, 5) + b"llama"
    for i in range(n):
        name = f"t{i}".encode()
        out += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 1, 0, 32 * i)
    out += bytes(-len(out) % 32) + bytes(32 * n)
    path.write_bytes(out)
    return len(out)


def measure(read: Callable[[], Any]) -> dict[str, Any]:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        read()
        outcome = "read"
    except Exception as exc:  # the figure is how each reader ends, whatever it raises
        outcome = f"refused: {type(exc).__name__}: {str(exc)[:90]}"
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": round(seconds, 4), "peak_mb": round(peak / 2**20, 1), "outcome": outcome}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hostile-headers", description=__doc__)
    parser.add_argument("--tensors", type=int, default=1_000_000)
    parser.add_argument("--gguf-py", action="store_true", help="also time gguf-py (slow)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from engine.gguf.header import read_gguf_summary
    from engine.gguf.reader import open_gguf

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "many.gguf"
        size = write_many_tensors(path, args.tensors)
        rows = {
            "hearth summary (inspect/models)": measure(lambda: read_gguf_summary(path)),
            "hearth reader (load)": measure(lambda: open_gguf(path)),
        }
        if args.gguf_py:
            from gguf import GGUFReader

            rows["gguf-py GGUFReader (peer)"] = measure(lambda: GGUFReader(path))
    report = {"tensors": args.tensors, "file_mb": round(size / 2**20, 1), "readers": rows}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{args.tensors:,} tensors claimed in a {report['file_mb']} MB file")
    for name, row in rows.items():
        print(f"  {name:<34} {row['seconds']:>9.4f} s  {row['peak_mb']:>8.1f} MB  {row['outcome']}")
    return 0
