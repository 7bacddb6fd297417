"""The kernel's ``HearthAttention`` op (`engine/kernels/attention.h`, `attention_op.h`).

It takes GroupQueryAttention's place in text graphs, so it must compute what that op
computes: each case below (rotary neox and interleaved, partial rotary, a sliding window, a
logit softcap, sink logits, packed q|k|v, batches, first prompts, long contexts over several
key chunks) runs one node of each on the same random inputs and compares the outputs and the
K/V written into the cache. It must also round every query row alike however many rows a call
has and however many threads run it (a decode step must equal the same token inside a verified
draft or a prefill: the loop speculates on that), and refuse bad shapes with a message. The
graphs that use it, end to end, are covered by tests/engine/loop/test_exact_steps.py and
test_speculative_fastpath.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.kernels import native

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native ops cannot serve here")

F32, I32 = 1, 6  # ONNX element types


def _model(op: str, H: int, KV: int, D: int, B: int, buf: int, half: int, attrs: dict[str, Any],
           packed: bool, sinks: bool) -> bytes:  # fmt: skip
    from onnx import helper

    # q of any width: the op itself checks it
    shapes = [("q", F32, [B, None, None]), ("k", F32, [B, None, KV * D]),
              ("v", F32, [B, None, KV * D]), ("pk", F32, [B, KV, buf, D]),
              ("pv", F32, [B, KV, buf, D]), ("sl", I32, [B]), ("tot", I32, []),
              ("cos", F32, [buf, half]), ("sin", F32, [buf, half]),
              ("sinks", F32, [None])]  # fmt: skip
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in shapes]
    outputs = [helper.make_tensor_value_info("o", F32, [B, None, H * D]),
               helper.make_tensor_value_info("prk", F32, [B, KV, buf, D]),
               helper.make_tensor_value_info("prv", F32, [B, KV, buf, D])]  # fmt: skip
    common = {"num_heads": H, "kv_num_heads": KV, **attrs}
    if op == "gqa":
        qkv = ["q", "", ""] if packed else ["q", "k", "v"]
        names = [*qkv, "pk", "pv", "sl", "tot", "cos", "sin", *(["", "", "sinks"] if sinks else [])]
        if not common.get("softcap"):
            common.pop("softcap", None)
        node = helper.make_node("GroupQueryAttention", names, ["o", "prk", "prv"],
                                domain="com.microsoft", **common)  # fmt: skip
        domain = "com.microsoft"
    else:
        qkv = ["q", "q", "q"] if packed else ["q", "k", "v"]
        names = [*qkv, "pk", "pv", "sl", "tot", "cos", "sin", "sinks"]
        full = {"softcap": 0.0, "local_window_size": -1, "rotary_interleaved": 0, **common}
        node = helper.make_node("HearthAttention", names, ["o", "prk", "prv"],
                                domain="ai.onnx.contrib", packed=int(packed), **full)  # fmt: skip
        domain = "ai.onnx.contrib"
    used = {n for n in node.input if n}
    graph = helper.make_graph([node], "g", [i for i in inputs if i.name in used], outputs)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


class Case:
    """One op on one configuration; `run` feeds it rows and returns (out, K cache, V cache)."""

    def __init__(self, op: str, H: int = 4, KV: int = 2, D: int = 16, B: int = 1, buf: int = 64,
                 half: int | None = None, packed: bool = False, sinks: bool = False, seed: int = 0,
                 **attrs: Any) -> None:  # fmt: skip
        import onnxruntime as ort

        self.H, self.KV, self.D, self.B, self.buf, self.packed = H, KV, D, B, buf, packed
        self.half, self.op = half or D // 2, op
        attrs = {"do_rotary": 0, "scale": 0.25, **attrs}
        options = ort.SessionOptions()
        if op != "gqa":
            options.register_custom_ops_library(native.library_path())
        model = _model(op, H, KV, D, B, buf, self.half, attrs, packed, sinks)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(seed)
        self.cache = [rng.standard_normal((B, KV, buf, D), dtype=np.float32) for _ in range(2)]
        angles = rng.uniform(0, 6, (buf, self.half)).astype(np.float32)
        self.rope = np.cos(angles), np.sin(angles)
        self.sinks = rng.standard_normal(H).astype(np.float32) if sinks else None

    def run(self, rows: np.ndarray, lengths: list[int]) -> tuple[np.ndarray, ...]:
        """``rows`` (B, S, (H + 2·KV)·D): q | k | v per row; ``lengths``: each sequence's
        total length after these rows."""
        import onnxruntime as ort

        H, KV, D = self.H, self.KV, self.D
        q, k, v = rows[..., : H * D], rows[..., H * D : (H + KV) * D], rows[..., (H + KV) * D :]
        feeds = {"q": np.ascontiguousarray(rows if self.packed else q),
                 "sl": np.array(lengths, np.int32) - 1, "tot": np.array(max(lengths), np.int32),
                 "cos": self.rope[0], "sin": self.rope[1]}  # fmt: skip
        if not self.packed:
            feeds |= {"k": np.ascontiguousarray(k), "v": np.ascontiguousarray(v)}
        if self.op != "gqa":
            feeds["sinks"] = self.sinks if self.sinks is not None else np.zeros(0, np.float32)
        elif self.sinks is not None:
            feeds["sinks"] = self.sinks
        values = [ort.OrtValue.ortvalue_from_numpy(c) for c in self.cache]
        binding = self.session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_ortvalue_input("pk", values[0])
        binding.bind_ortvalue_input("pv", values[1])
        binding.bind_output("o")
        binding.bind_ortvalue_output("prk", values[0])  # present = past: written in place
        binding.bind_ortvalue_output("prv", values[1])
        self.session.run_with_iobinding(binding)
        self.cache = [value.numpy().copy() for value in values]
        return binding.get_outputs()[0].numpy().copy(), self.cache[0], self.cache[1]


def _rows(case: Case, S: int, seed: int = 1) -> np.ndarray:
    width = (case.H + 2 * case.KV) * case.D
    return np.random.default_rng(seed).standard_normal((case.B, S, width), dtype=np.float32)


CASES = {
    "plain": {},
    "rotary": {"do_rotary": 1},
    "interleaved": {"do_rotary": 1, "rotary_interleaved": 1},
    "partial rotary": {"do_rotary": 1, "D": 32, "half": 8},
    "window": {"local_window_size": 3, "past": 9},
    "softcap": {"softcap": 2.0},
    "sinks": {"sinks": True},
    "packed": {"packed": True, "do_rotary": 1},
    "one row deep": {"S": 1, "past": 40},
    "first prompt": {"S": 7, "past": 0},
    "batch": {"B": 2, "S": 1, "past": 9},
    "grouped 8:1, head 64": {"H": 8, "KV": 1, "D": 64, "scale": 0.125},
    "head 48 (three 16s)": {"H": 2, "KV": 1, "D": 48},
    "chunks": {"S": 3, "past": 700, "buf": 1024, "do_rotary": 1, "local_window_size": 300},
}


@pytest.mark.parametrize("name", list(CASES))
def test_it_computes_what_group_query_attention_computes(name: str) -> None:
    config = dict(CASES[name])
    S, past = config.pop("S", 3), config.pop("past", 5)
    gqa, ours = Case("gqa", **config), Case("hearth", **config)
    rows = _rows(gqa, S)
    lengths = [past + S] * gqa.B
    want, got = gqa.run(rows, lengths), ours.run(rows, lengths)
    scale = float(np.abs(want[0]).max())
    assert np.abs(got[0] - want[0]).max() <= 2e-6 * max(scale, 1.0), name
    for w, g in zip(want[1:], got[1:], strict=True):  # the new rows' K (rotated) and V
        assert np.allclose(g[:, :, : past + S], w[:, :, : past + S], rtol=0, atol=1e-6), name
    assert not np.array_equal(got[0], np.zeros_like(got[0]))


def test_a_row_rounds_alike_in_any_run_and_at_any_thread_count() -> None:
    """A run of 9 rows, and the same rows as 8 then 1 and as 9 single steps, at 1 and 2
    threads: every row's output bit for bit (several key chunks, a window, softcap)."""
    config = {"H": 8, "KV": 2, "D": 64, "buf": 1024, "do_rotary": 1, "softcap": 30.0,
              "local_window_size": 400}  # fmt: skip
    past, S = 600, 9
    rows = _rows(Case("hearth", **config), S, seed=3)
    outs = []
    for threads in (1, 2):
        native.set_op_threads(threads)
        for split in ([9], [8, 1], [1] * 9):
            case = Case("hearth", **config)
            done, parts = 0, []
            for n in split:
                parts.append(case.run(rows[:, done : done + n], [past + done + n])[0])
                done += n
            outs.append(np.concatenate(parts, axis=1))
    native.set_op_threads(2)
    for other in outs[1:]:
        assert np.array_equal(outs[0], other), float(np.abs(outs[0] - other).max())


@pytest.mark.parametrize(
    ("what", "lengths", "message"),
    [("rows wider than the heads", None, "mismatched shapes"),
     ("a sequence past the cache", [70], "past the cache")],
)  # fmt: skip
def test_bad_shapes_fail_with_a_message(what: str, lengths: list[int] | None, message: str) -> None:
    case = Case("hearth", packed=lengths is None)
    rows = _rows(case, 2)
    if lengths is None:  # packed q | k | v one column short: the sizes no longer add up
        rows = rows[..., :-1]
    with pytest.raises(Exception, match=message):
        case.run(rows, lengths or [6])
