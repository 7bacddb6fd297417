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

``--native`` measures Hearth's own kernel instead (`engine.kernels.experts.matmul`): GMAC/s
per ggml type of a prefill (``--rows`` activation rows against an OUT x IN matrix, random
blocks with sane float16 scales), the path a long prompt's expert and dense matrices take.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from engine.kernels.experts import QuantMatrix

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


# ggml type name -> byte offsets of its float16 scales in a block (the rest random codes)
NATIVE_TYPES: dict[str, tuple[int, ...]] = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "MXFP4": (),
    "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
    "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,), "IQ3_XXS": (0,), "IQ3_S": (0,),
    "IQ4_NL": (0,), "IQ4_XS": (0,),
}  # fmt: skip


def native_matrix(name: str, out: int, inp: int, rng: np.random.Generator) -> QuantMatrix:
    """One expert of ``out`` x ``inp`` random blocks of ggml type ``name`` (scales ~0.002:
    no float16 infinities or subnormals to slow a path down)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from engine.kernels.experts import QuantMatrix

    qt = GGMLQuantizationType[name]
    block, size = GGML_QUANT_SIZES[qt]
    b = rng.integers(0, 256, (out * inp // block, size), dtype=np.uint8)
    for at in NATIVE_TYPES[name]:
        d = (rng.uniform(0.5, 1.5, len(b)) * 0.002).astype(np.float16)
        b[:, at : at + 2] = d.view(np.uint8).reshape(-1, 2)
    if qt == GGMLQuantizationType.MXFP4:
        b[:, 0] = rng.integers(118, 126, len(b))
    return QuantMatrix(int(qt), b.reshape(1, -1), out, inp)


def time_native(
    rows: int, out: int, inp: int, threads: int, rounds: int
) -> dict[str, dict[str, float]]:
    """Per type: the best / median ms of one matmul of ``rows`` activation rows, and GMAC/s."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from engine.kernels.experts import matmul, supported

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, inp)).astype(np.float32)
    mats = {}
    for name in NATIVE_TYPES:  # the types whose blocks tile a row of ``inp``
        if inp % GGML_QUANT_SIZES[GGMLQuantizationType[name]][0] == 0:
            m = native_matrix(name, out, inp, rng)
            if supported(m.qtype):
                mats[name] = m
    times: dict[str, list[float]] = {name: [] for name in mats}
    for _ in range(rounds):  # types alternate, so a busy moment slows them alike
        for name, m in mats.items():
            matmul(m, 0, x, threads)  # warm: the other types ran in between
            start = time.perf_counter()
            matmul(m, 0, x, threads)
            times[name].append(time.perf_counter() - start)
    macs = rows * out * inp
    return {
        name: {"best_ms": 1e3 * min(t), "median_ms": 1e3 * float(np.median(t)),
               "gmac_s": macs / min(t) / 1e9, "median_gmac_s": macs / float(np.median(t)) / 1e9}
        for name, t in times.items()
    }  # fmt: skip


def main_native(args: argparse.Namespace) -> int:
    report = {
        "threads": args.threads,
        "rows": args.rows,
        "matrix": [args.out, args.inp],
        "load_average": os.getloadavg()[0],
        "types": time_native(args.rows, args.out, args.inp, args.threads, args.rounds),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"native kernel: {args.rows} rows x ({args.out} x {args.inp}), {args.threads} threads, "
          f"load average {report['load_average']:.1f}")  # fmt: skip
    print(f"  {'type':<8} {'best ms':>8} {'GMAC/s':>7} {'median':>7}")
    for name, row in report["types"].items():
        print(f"  {name:<8} {row['best_ms']:8.2f} {row['gmac_s']:7.1f} {row['median_gmac_s']:7.1f}")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench kernels", description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", action="store_true")
    p.add_argument("--native", action="store_true", help="Hearth's kernel: prefill GMAC/s per type")
    p.add_argument("--rows", type=int, default=128, help="--native: activation rows")
    p.add_argument("--out", type=int, default=4096, help="--native: matrix outputs")
    p.add_argument("--inp", type=int, default=1024, help="--native: matrix inputs")
    args = p.parse_args(argv)
    if args.native:
        return main_native(args)
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
