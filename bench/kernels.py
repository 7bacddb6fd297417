"""`python -m bench kernels`: what ONNX Runtime's CPU `MatMulNBits` runs, and how fast, per layout.

Owns two measurements behind the fast path's choice of layouts (`engine.gguf.repack`):
1. which ``bits`` the installed onnxruntime accepts (a one-node session per width 1..8);
2. one decode step's worth of the matrices a Qwen2.5-0.5B Q4_K_M file holds as Q5_0 (the rows
   of width 896: q|k|v, o, gate|up; 24 layers, random codes), as one graph, in each layout
   that could carry 5-bit blocks: 8-bit codes (what the fast path runs today, exact), 4-bit
   (what a native 5-bit kernel could approach; NOT exact for Q5_0) and 4-bit + 2-bit (the exact
   split ``d·(lo − 8) + 8d·(hi − 2)``: two nodes and an Add). Rounds alternate between layouts
   so a busy machine slows them alike; the best and median step times are printed (``--json``
   for one object). Figures only: nothing here asserts a timing. Does not build model graphs.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

LAYERS = 24
SHAPES = ((1152, 896), (896, 896), (9728, 896))  # (N, K): q|k|v, o, gate|up of Qwen2.5-0.5B
# layout -> the (bits, scale per block) nodes summed for one matrix
LAYOUTS: dict[str, tuple[int, ...]] = {"8-bit": (8,), "4-bit": (4,), "4+2-bit": (4, 2)}


def supported_bits(threads: int = 1) -> dict[int, str]:
    """bits -> "ok" or the first line of onnxruntime's refusal, for widths 1..8."""
    out = {}
    for bits in range(1, 9):
        try:
            _session([("x", 64, 64, bits)], 64, threads, np.random.default_rng(0))
            out[bits] = "ok"
        except Exception as exc:  # onnxruntime's own message says why
            out[bits] = str(exc).split("was false.")[-1].strip().splitlines()[0][:120]
    return out


def time_layouts(threads: int, rounds: int, layers: int = LAYERS) -> dict[str, dict[str, float]]:
    """Per layout: bytes of weights and the best / median time of one pass over all matrices."""
    rng = np.random.default_rng(0)
    sessions = {}
    for name, widths in LAYOUTS.items():
        nodes = [(f"l{i}m{j}", n, k, b) for i in range(layers) for j, (n, k) in enumerate(SHAPES)
                 for b in widths]  # fmt: skip
        sessions[name] = _session(nodes, SHAPES[0][1], threads, rng)
    x = rng.standard_normal((1, 1, SHAPES[0][1])).astype(np.float32)
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(rounds):
        for name, (session, _bytes) in sessions.items():
            session.run(None, {"x": x})  # warm: the other layouts ran in between
            start = time.perf_counter()
            session.run(None, {"x": x})
            times[name].append(time.perf_counter() - start)
    return {
        name: {
            "weight_mb": sessions[name][1] / 1e6,
            "best_ms": 1e3 * min(t),
            "median_ms": 1e3 * float(np.median(t)),
        }
        for name, t in times.items()
    }


def _session(
    nodes: list[tuple[str, int, int, int]], k: int, threads: int, rng: np.random.Generator
) -> tuple[Any, int]:
    """One graph: every (tag, N, K, bits) node reads x; nodes sharing a tag are summed."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    inits: list[Any] = []
    graph_nodes: list[Any] = []
    by_tag: dict[str, list[str]] = {}
    for tag, n, kk, bits in nodes:
        codes = rng.integers(0, 256, (n, kk // 32, 32 * bits // 8), dtype=np.uint8)
        scales = rng.uniform(1e-3, 1e-2, (n, kk // 32)).astype(np.float32)
        name = f"{tag}b{bits}"
        inits += [
            numpy_helper.from_array(codes, name + "q"),
            numpy_helper.from_array(scales, name + "d"),
        ]
        graph_nodes.append(helper.make_node(
            "MatMulNBits", ["x", name + "q", name + "d"], [name], domain="com.microsoft",
            K=kk, N=n, bits=bits, block_size=32, accuracy_level=4,
        ))  # fmt: skip
        by_tag.setdefault(tag, []).append(name)
    outputs = []
    for tag, parts in by_tag.items():
        out = parts[0]
        if len(parts) > 1:
            out = tag + "sum"
            graph_nodes.append(helper.make_node("Sum", parts, [out]))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, k])
    graph = helper.make_graph(graph_nodes, "kernels", [x], outputs, inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 4  # refusals are reported by supported_bits, not logged
    session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    return session, sum(int(np.prod(t.dims)) * (4 if t.data_type == 1 else 1) for t in inits)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench kernels", description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    import onnxruntime

    report = {
        "onnxruntime": onnxruntime.__version__,
        "threads": args.threads,
        "load_average": os.getloadavg()[0],
        "bits": supported_bits(),
        "layouts": time_layouts(args.threads, args.rounds),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"onnxruntime {report['onnxruntime']}, {args.threads} threads, "
          f"load average {report['load_average']:.1f}")  # fmt: skip
    for bits, verdict in report["bits"].items():
        print(f"  MatMulNBits bits={bits}: {verdict}")
    print("one decode pass over Qwen2.5-0.5B's Q5_0 matrices (24 layers):")
    base = report["layouts"]["8-bit"]["best_ms"]
    for name, row in report["layouts"].items():
        speed = base / row["best_ms"]
        print(f"  {name:<8} {row['weight_mb']:6.0f} MB  best {row['best_ms']:6.1f} ms  "
              f"median {row['median_ms']:6.1f} ms  ({speed:.2f}x 8-bit)")  # fmt: skip
    return 0
