"""The kernel's ``HearthAttention`` op (`engine/kernels/attention.h`, `attention_op.h`).

It takes GroupQueryAttention's place in text graphs, so it must compute what that op
computes: each case below (rotary neox and interleaved, partial rotary, a sliding window, a
logit softcap, sink logits, packed q|k|v, batches, first prompts, long contexts over several
key chunks) runs one node of each on the same random inputs and compares the outputs and the
K/V written into the cache. ``HearthAttentionHalf`` keeps the cache in float16: it must write
each new row's K and V rounded as numpy rounds them and compute what the float op computes over
the same values. Without its causal mask (Gemma's image tokens) it must compute what
GroupQueryAttention computes with ``causal=0`` and a bias hiding the keys past a sliding window.
Both must round every query row alike however many rows a call has and however many threads run
it (a decode step must equal the same token inside a verified draft or a prefill: the loop
speculates on that), and refuse bad shapes with a message. The
graphs that use it, end to end, are covered by tests/engine/loop/test_exact_steps.py and
test_speculative_fastpath.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.kernels import native

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native ops cannot serve here")

F32, I32, F16 = 1, 6, 10  # ONNX element types


def _model(op: str, H: int, KV: int, D: int, B: int, buf: int, half: int, attrs: dict[str, Any],
           packed: bool, sinks: bool) -> bytes:  # fmt: skip
    from onnx import helper

    kv = F16 if op == "half" else F32
    # q of any width: the op itself checks it
    shapes = [("q", F32, [B, None, None]), ("k", F32, [B, None, KV * D]),
              ("v", F32, [B, None, KV * D]), ("pk", kv, [B, KV, buf, D]),
              ("pv", kv, [B, KV, buf, D]), ("sl", I32, [B]), ("tot", I32, []),
              ("cos", F32, [buf, half]), ("sin", F32, [buf, half]),
              ("sinks", F32, [None]), ("bias", F32, [B, 1, None, None])]  # fmt: skip
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in shapes]
    outputs = [helper.make_tensor_value_info("o", F32, [B, None, H * D]),
               helper.make_tensor_value_info("prk", kv, [B, KV, buf, D]),
               helper.make_tensor_value_info("prv", kv, [B, KV, buf, D])]  # fmt: skip
    common = {"num_heads": H, "kv_num_heads": KV, **attrs}
    if op == "gqa":
        qkv = ["q", "", ""] if packed else ["q", "k", "v"]
        names = [*qkv, "pk", "pv", "sl", "tot", "cos", "sin"]
        if common.get("causal", 1) == 0:  # no local_window_size without the mask: the bias
            names += ["", "bias"] if common.pop("local_window_size", -1) > 0 else []
        else:
            common.pop("causal", None)
        names += ["", "", "sinks"][len(names) - 9 :] if sinks else []
        if not common.get("softcap"):
            common.pop("softcap", None)
        node = helper.make_node("GroupQueryAttention", names, ["o", "prk", "prv"],
                                domain="com.microsoft", **common)  # fmt: skip
        domain = "com.microsoft"
    else:
        qkv = ["q", "q", "q"] if packed else ["q", "k", "v"]
        names = [*qkv, "pk", "pv", "sl", "tot", "cos", "sin", "sinks"]
        full = {"softcap": 0.0, "local_window_size": -1, "rotary_interleaved": 0, "causal": 1,
                **common}  # fmt: skip
        name = "HearthAttentionHalf" if op == "half" else "HearthAttention"
        node = helper.make_node(name, names, ["o", "prk", "prv"],
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
        self.window = int(attrs.get("local_window_size", -1))
        attrs = {"do_rotary": 0, "scale": 0.25, **attrs}
        options = ort.SessionOptions()
        if op != "gqa":
            options.register_custom_ops_library(native.library_path())
        model = _model(op, H, KV, D, B, buf, self.half, attrs, packed, sinks)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(seed)
        self.cache = [rng.standard_normal((B, KV, buf, D), dtype=np.float32) for _ in range(2)]
        if op == "half":
            self.cache = [c.astype(np.float16) for c in self.cache]
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
        if "bias" in {i.name for i in self.session.get_inputs()}:
            feeds["bias"] = self._window_bias(rows.shape[1], lengths)
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

    def _window_bias(self, S: int, lengths: list[int]) -> np.ndarray:
        """-inf where a key sits ``window`` or more positions before its query (the image
        run's mask, `engine.runners.image_rows`), for GroupQueryAttention without its mask."""
        total = max(lengths)
        query = np.arange(total - S, total)[:, None]
        hidden = query - np.arange(total)[None, :] >= self.window
        bias = np.where(hidden, -np.inf, 0.0).astype(np.float32)
        return np.broadcast_to(bias, (self.B, 1, S, total)).copy()


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


@pytest.mark.parametrize("op", ["hearth", "half"])
def test_a_row_rounds_alike_in_any_run_and_at_any_thread_count(op: str) -> None:
    """A run of 9 rows, and the same rows as 8 then 1 and as 9 single steps, at 1 and 2
    threads: every row's output bit for bit (several key chunks, a window, softcap), over a
    float32 and a float16 cache."""
    config = {"H": 8, "KV": 2, "D": 64, "buf": 1024, "do_rotary": 1, "softcap": 30.0,
              "local_window_size": 400}  # fmt: skip
    past, S = 600, 9
    rows = _rows(Case(op, **config), S, seed=3)
    outs = []
    for threads in (1, 2):
        native.set_op_threads(threads)
        for split in ([9], [8, 1], [1] * 9):
            case = Case(op, **config)
            done, parts = 0, []
            for n in split:
                parts.append(case.run(rows[:, done : done + n], [past + done + n])[0])
                done += n
            outs.append(np.concatenate(parts, axis=1))
    native.set_op_threads(2)
    for other in outs[1:]:
        assert np.array_equal(outs[0], other), float(np.abs(outs[0] - other).max())


def _halved(rows: np.ndarray) -> np.ndarray:
    """``rows`` rounded to the nearest float16 values (kept float32)."""
    return rows.astype(np.float16).astype(np.float32)


@pytest.mark.parametrize("name", [*CASES, "both ways"])
def test_a_float16_cache_holds_and_reads_what_a_float_cache_would(name: str) -> None:
    """The half op against the float op over the same values (the cache's float16 values as
    floats, rows on float16's grid): the new rows' K (rotated) and V are written as numpy
    rounds them, and without rotation (every K already on the grid) the outputs agree bit
    for bit; with it, a rotated K rounds once, which moves the output a little."""
    config = dict(CASES.get(name, {"causal": 0, "local_window_size": 4, "past": 9}))
    S, past = config.pop("S", 3), config.pop("past", 5)
    ours, floats = Case("half", **config), Case("hearth", **config)
    floats.cache = [c.astype(np.float32) for c in ours.cache]
    rows = _halved(_rows(ours, S))
    lengths = [past + S] * ours.B
    got, want = ours.run(rows, lengths), floats.run(rows, lengths)
    for g, w in zip(got[1:], want[1:], strict=True):
        assert g.dtype == np.float16
        assert np.array_equal(g, w.astype(np.float16)), name
    scale = max(float(np.abs(want[0]).max()), 1.0)
    if not config.get("do_rotary"):
        assert np.array_equal(got[0], want[0]), name
    else:
        assert np.abs(got[0] - want[0]).max() <= 5e-3 * scale, name
    assert np.abs(got[0] - want[0]).max() > 0 or not config.get("do_rotary"), name


BOTH_WAYS = {
    "prefix and image": {"S": 6, "past": 5},
    "sliding window": {"S": 6, "past": 9, "local_window_size": 4, "do_rotary": 1},
    "grouped, chunks": {"S": 5, "past": 600, "buf": 1024, "H": 8, "KV": 2, "D": 64},
}


@pytest.mark.parametrize("name", list(BOTH_WAYS))
def test_without_its_causal_mask_it_computes_what_group_query_attention_computes(
    name: str,
) -> None:
    """An image's tokens (``causal=0``): every row sees the prefix and every new row, before and
    after it, but keys a sliding window hides before it (GroupQueryAttention: its bias)."""
    config = {**BOTH_WAYS[name], "causal": 0}
    S, past = config.pop("S"), config.pop("past")
    gqa, ours = Case("gqa", **config), Case("hearth", **config)
    rows = _rows(gqa, S)
    want, got = gqa.run(rows, [past + S]), ours.run(rows, [past + S])
    scale = max(float(np.abs(want[0]).max()), 1.0)
    assert np.abs(got[0] - want[0]).max() <= 2e-6 * scale, name
    causal = Case("hearth", **{**config, "causal": 1}).run(rows, [past + S])[0]
    assert not np.allclose(causal[:, :-1], got[0][:, :-1]), "the mask made no difference"


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


def test_calls_from_two_threads_at_once_compute_what_each_alone_does() -> None:
    """Each calling thread keeps its own buffers between calls (attention.h `attn_buffer`):
    two threads running the op over and over at once, on calls of different sizes, each get
    bit for bit what their call gives alone."""
    import threading

    # long enough (a few hundred microseconds a call) for the two threads' calls to overlap
    configs = [({"H": 8, "KV": 2, "D": 128, "buf": 4096, "do_rotary": 1}, 3, 4000),
               ({"H": 4, "KV": 1, "D": 256, "buf": 4096, "softcap": 20.0}, 1, 3000)]  # fmt: skip
    cases = [Case("half", seed=i, **config) for i, (config, _, _) in enumerate(configs)]
    rows = [_rows(cases[i], configs[i][1], seed=i) for i in range(2)]
    lengths = [[configs[i][2] + configs[i][1]] for i in range(2)]
    alone = [cases[i].run(rows[i], lengths[i])[0] for i in range(2)]
    got: list[list[np.ndarray]] = [[], []]

    def repeat(i: int) -> None:
        for _ in range(40):
            got[i].append(cases[i].run(rows[i], lengths[i])[0])

    threads = [threading.Thread(target=repeat, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert len(got[i]) == 40
        assert all(np.array_equal(g, alone[i]) for g in got[i]), i
