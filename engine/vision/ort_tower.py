"""The vision towers' transformer blocks as ONNX Runtime graphs: the fast encoder.

Owns `OrtTower`: for one mmproj (gemma3, gemma4v, qwen3vl_merger), one session per ViT block
(or per `GROUP` blocks), built once in memory, and `encode_fast`, which runs the numpy patch
embedding (`engine.vision.encoders.*_embed`), the blocks in the sessions, and the numpy pooling
and projector (`*_finish`). The numpy encoder stays the reference: the graph follows it node for
node, rounding activations before each matrix as ggml's dot product does (f16 for F16
matrices, bf16 for BF16, Q8_0 blocks for Q8_0), GELU through f16, attention in float32
(com.microsoft MultiHeadAttention), rope from precomputed cos/sin inputs.

The sessions share one ORT arena (`_shared_arena`), shrunk at the end of each encode.
Weights stay in the file's type and are not copied: each block matrix is a graph *input* fed,
on every run, an OrtValue over the mmproj's own mapped bytes (F16/F32/BF16; Q8_0 as int8 codes
plus f16 scales, split from the blocks once and held here), widened to float32 right before
its Gemm, one block's matrices at a time. As initializers they were copied into the protobuf
and again into the session: 2.2 GB peak for Gemma 4 E2B's 368 MB tower, 2.9x libmtmd's.
A file with other block types (Q4_K ...) gets ``None`` from `tower_for` and the numpy encoder.

Does not own reading the file, pre-processing or the numpy arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.runners.session_options import physical_cores, spinning_pays
from engine.vision import encoders as enc
from engine.vision.mmproj import Mmproj
from engine.vision.preprocess import Prepared

F32 = np.float32
_GRAPH_TYPES = {"F32", "F16", "BF16", "Q8_0"}
# Measured paired beside libmtmd (docs/vision.md): one arena shared by the sessions cut the
# encode's CPU time 13-21 % (each run no longer faults in fresh pages for its 7-40 MB
# buffers); 2 or 4 blocks a session saved nothing more and added 20-70 MB of peak.
GROUP = 1  # blocks a session
SHARED_ARENA = True


class _Graph:
    """ONNX nodes and initializers being collected for one tower."""

    def __init__(self, mm: Mmproj) -> None:
        self.mm, self.nodes, self.inits = mm, [], []  # type: ignore[var-annotated]
        self.weights: dict[str, tuple[np.ndarray, int]] = {}  # graph inputs: (array, onnx type)
        self._n = 0

    def name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}.{self._n}"

    def const(self, arr: np.ndarray, stem: str = "c") -> str:
        from onnx import numpy_helper

        name = self.name(stem)
        if arr.dtype == np.uint16:  # bf16 bits
            from onnx import TensorProto, helper

            t = helper.make_tensor(name, TensorProto.BFLOAT16, arr.shape, arr.tobytes(), raw=True)
            self.inits.append(t)
        else:
            self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def weight(self, arr: np.ndarray, onnx_type: int, stem: str) -> str:
        """A matrix as a graph input fed ``arr`` (viewed as ``onnx_type``) on every run."""
        name = self.name(stem)
        self.weights[name] = (arr, onnx_type)
        return name

    def op(self, kind: str, ins: list[str], domain: str = "", n_out: int = 1, **attrs: Any) -> Any:
        from onnx import helper

        outs = [self.name(kind) for _ in range(n_out)]
        self.nodes.append(helper.make_node(kind, ins, outs, domain=domain, **attrs))
        return outs[0] if n_out == 1 else outs

    def cast(self, x: str, to: int) -> str:
        return str(self.op("Cast", [x], to=to))

    def vec(self, name: str) -> str:
        """A small vector (norm weight, bias) in float32."""
        return self.const(self.mm.weight(name), name)

    def shape(self, *dims: int) -> str:
        return self.const(np.array(dims, np.int64), "shape")

    def scalar(self, v: float) -> str:
        return self.const(np.array(v, F32), "scalar")


def _round_activations(g: _Graph, x: str, qtype: str) -> str:
    """The graph twin of `engine.vision.ops.round_activations`."""
    from onnx import TensorProto as T

    if qtype == "F16":
        return g.cast(g.cast(x, T.FLOAT16), T.FLOAT)
    if qtype == "BF16":
        return g.cast(g.cast(x, T.BFLOAT16), T.FLOAT)
    if qtype == "Q8_0":
        blocks = g.op("Reshape", [x, g.shape(0, -1, 32)])
        amax = g.op("ReduceMax", [g.op("Abs", [blocks]), g.shape(-1)], keepdims=1)
        d = g.op("Div", [amax, g.scalar(127.0)])
        inv = g.op("Div", [g.scalar(127.0), g.op("Max", [amax, g.scalar(1e-30)])])
        q = g.op("Round", [g.op("Mul", [blocks, inv])])
        d16 = g.cast(g.cast(d, T.FLOAT16), T.FLOAT)
        return str(g.op("Reshape", [g.op("Mul", [q, d16]), g.shape(0, -1)]))
    return x


def _matrix(g: _Graph, name: str) -> str:
    """``name`` (out, in) as float32, widened from its stored type inside the graph."""
    from onnx import TensorProto as T

    t = g.mm.tensor(name)
    assert t is not None
    qtype = g.mm.qtype(name)
    data = np.asarray(t.data)
    out, inp = (int(v) for v in reversed(t.shape.tolist()))
    if qtype == "F32":
        return g.weight(np.asarray(data).view(F32).reshape(out, inp), T.FLOAT, name)
    if qtype == "F16":
        return g.cast(g.weight(np.asarray(data).view(np.float16).reshape(out, inp), T.FLOAT16,
                               name), T.FLOAT)  # fmt: skip
    if qtype == "BF16":
        bits = np.asarray(data).view(np.uint16).reshape(out, inp)
        return g.cast(g.weight(bits, T.BFLOAT16, name), T.FLOAT)
    blocks = np.asarray(data, np.uint8).reshape(out, inp // 32, 34)  # Q8_0: f16 scale, 32 int8
    scales = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16)  # (out, nb, 1)
    codes = np.ascontiguousarray(blocks[:, :, 2:]).view(np.int8)
    w = g.op("Mul", [g.cast(g.weight(codes, T.INT8, name), T.FLOAT),
                     g.cast(g.weight(scales, T.FLOAT16, f"{name}.d"), T.FLOAT)])  # fmt: skip
    return str(g.op("Reshape", [w, g.shape(out, inp)]))


def _linear(g: _Graph, x: str, stem: str, bias: bool = True) -> str:
    """x (T, in) @ W.T + b, with libmtmd's clamps (gemma4v) and activation rounding."""
    name = f"{stem}.weight"
    clamp = g.mm.clamps.get(name)
    if clamp is not None:
        x = g.op("Clip", [x, g.scalar(clamp[0]), g.scalar(clamp[1])])
    ins = [_round_activations(g, x, g.mm.qtype(name)), _matrix(g, name)]
    if bias and g.mm.has(f"{stem}.bias"):
        ins.append(g.vec(f"{stem}.bias"))
    y = str(g.op("Gemm", ins, transB=1))
    if clamp is not None:
        y = g.op("Clip", [y, g.scalar(clamp[2]), g.scalar(clamp[3])])
    return y


def _gelu(g: _Graph, x: str) -> str:
    """`engine.vision.ops.gelu`: tanh GELU through f16, identity above 10, zero below -10."""
    from onnx import TensorProto as T

    h = g.cast(g.cast(x, T.FLOAT16), T.FLOAT)
    y = g.cast(g.cast(g.op("Gelu", [h], approximate="tanh"), T.FLOAT16), T.FLOAT)
    y = g.op("Where", [g.op("GreaterOrEqual", [x, g.scalar(10.0)]), x, y])
    return str(g.op("Where", [g.op("LessOrEqual", [x, g.scalar(-10.0)]), g.scalar(0.0), y]))


def _act(g: _Graph, x: str) -> str:
    if g.mm.params.gelu:
        return _gelu(g, x)
    return str(g.op("Mul", [x, g.op("Sigmoid", [g.op("Mul", [x, g.scalar(1.702)])])]))


def _layer_norm(g: _Graph, x: str, stem: str) -> str:
    ins = [x, g.vec(f"{stem}.weight"), g.vec(f"{stem}.bias")]
    return str(g.op("LayerNormalization", ins, axis=-1, epsilon=g.mm.params.eps))


def _rms_norm(g: _Graph, x: str, stem: str | None, width: int) -> str:
    w = g.vec(f"{stem}.weight") if stem else g.const(np.ones(width, F32), "ones")
    return str(g.op("SimplifiedLayerNormalization", [x, w], axis=-1, epsilon=g.mm.params.eps))


def _rope(g: _Graph, x: str, groups: int) -> str:
    """x (T, E) rotated in NEOX halves within each of ``groups`` parts of every head, by the
    graph inputs cos/sin (T, 1, d); out (1, T, E) for attention."""
    p = g.mm.params
    n = p.d_head // groups
    r = g.op("Reshape", [x, g.shape(0, p.n_head, groups, 2, n // 2)])
    a, b = g.op("Split", [r], n_out=2, axis=3, num_outputs=2)
    rot = g.op("Reshape", [g.op("Concat", [g.op("Neg", [b]), a], axis=3),
                           g.shape(0, p.n_head, p.d_head)])  # fmt: skip
    x3 = g.op("Reshape", [x, g.shape(0, p.n_head, p.d_head)])
    y = g.op("Add", [g.op("Mul", [x3, "cos"]), g.op("Mul", [rot, "sin"])])
    return str(g.op("Reshape", [y, g.shape(1, -1, p.n_embd)]))


def _attend(g: _Graph, q: str, k: str, v: str, scale: float) -> str:
    att = g.op("MultiHeadAttention", [q, k, v], domain="com.microsoft",
               num_heads=g.mm.params.n_head, scale=scale)  # fmt: skip
    return str(g.op("Reshape", [att, g.shape(-1, g.mm.params.n_embd)]))


def _to3(g: _Graph, x: str) -> str:
    return str(g.op("Reshape", [x, g.shape(1, -1, g.mm.params.n_embd)]))


def _block(g: _Graph, x: str, i: int) -> str:
    p, b = g.mm.params, f"v.blk.{i}"
    if p.projector == "gemma4v":
        h = _rms_norm(g, x, f"{b}.ln1", p.n_embd)
        q, k, v = (_linear(g, h, f"{b}.attn_{n}", bias=False) for n in "qkv")
        heads = g.shape(0, p.n_head, p.d_head)
        flat = g.shape(0, p.n_embd)
        q = g.op(
            "Reshape", [_rms_norm(g, g.op("Reshape", [q, heads]), f"{b}.attn_q_norm", 0), flat]
        )
        k = g.op(
            "Reshape", [_rms_norm(g, g.op("Reshape", [k, heads]), f"{b}.attn_k_norm", 0), flat]
        )
        v = g.op("Reshape", [_rms_norm(g, g.op("Reshape", [v, heads]), None, p.d_head), flat])
        a = _linear(g, _attend(g, _rope(g, q, 2), _rope(g, k, 2), _to3(g, v), 1.0),
                    f"{b}.attn_out", bias=False)  # fmt: skip
        x = g.op("Add", [x, _rms_norm(g, a, f"{b}.attn_post_norm", p.n_embd)])
        h = _rms_norm(g, x, f"{b}.ln2", p.n_embd)
        gate = _gelu(g, _linear(g, h, f"{b}.ffn_gate", bias=False))
        h = g.op("Mul", [gate, _linear(g, h, f"{b}.ffn_up", bias=False)])
        h = _linear(g, h, f"{b}.ffn_down", bias=False)
        return str(g.op("Add", [x, _rms_norm(g, h, f"{b}.ffn_post_norm", p.n_embd)]))
    scale = 1.0 / math.sqrt(p.d_head)
    h = _layer_norm(g, x, f"{b}.ln1")
    if p.projector == "qwen3vl_merger":
        q, k, v = g.op("Split", [_linear(g, h, f"{b}.attn_qkv")], n_out=3, axis=-1, num_outputs=3)
        att = _attend(g, _rope(g, q, 1), _rope(g, k, 1), _to3(g, v), scale)
    else:
        q, k, v = (_to3(g, _linear(g, h, f"{b}.attn_{n}")) for n in "qkv")
        att = _attend(g, q, k, v, scale)
    x = g.op("Add", [x, _linear(g, att, f"{b}.attn_out")])
    h = _layer_norm(g, x, f"{b}.ln2")
    first, second = ("ffn_down", "ffn_up") if enc.swapped(g.mm, i) else ("ffn_up", "ffn_down")
    h = _linear(g, _act(g, _linear(g, h, f"{b}.{first}")), f"{b}.{second}")
    return str(g.op("Add", [x, h]))


def build_blocks(
    mm: Mmproj, layers: range
) -> tuple[bytes, dict[str, tuple[np.ndarray, int]], list[int]]:
    """The serialized ONNX model of ``mm``'s blocks ``layers`` (inputs x (T, E) and, where the
    type has rope, cos/sin (T, 1, d_head); outputs the last block's x, then each deepstack
    layer's among them), its weight inputs (name -> (array over the file's bytes, ONNX element
    type)) and those deepstack layers."""
    from onnx import TensorProto, helper

    p, g = mm.params, _Graph(mm)
    x, outs, stack = "x", [], []
    for i in layers:
        x = _block(g, x, i)
        if i in mm.deepstack:
            outs.append(x)
            stack.append(i)
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, ["T", p.n_embd])]
    if p.projector != "gemma3":
        inputs += [helper.make_tensor_value_info(n, f, ["T", 1, p.d_head]) for n in ("cos", "sin")]
    inputs += [helper.make_tensor_value_info(n, t, a.shape) for n, (a, t) in g.weights.items()]
    graph = helper.make_graph(
        g.nodes, f"{p.projector}_blocks{layers.start}", inputs,
        [helper.make_tensor_value_info(n, f, ["T", p.n_embd]) for n in [x, *outs]], g.inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return bytes(model.SerializeToString()), g.weights, stack


class OrtTower:
    """One mmproj's blocks in ONNX Runtime sessions, ``group`` blocks a session (built on
    construction).

    Not one session for the tower: a block's weight Casts depend on nothing but their inputs,
    so a tower-wide graph is free to widen many blocks' matrices ahead of use (Gemma 4 E2B at
    budget 280 peaked at 0.88-1.08 GB that way, 0.72-0.74 GB a block at a time; libmtmd 0.75
    GB). A few blocks a session cut the session boundaries (each a copy of x and a pool that
    wakes up) for a bounded amount of early widening: docs/vision.md has the measurements."""

    def __init__(
        self,
        mm: Mmproj,
        threads: int | None = None,
        group: int = GROUP,
        spin: bool | None = None,
        shared_arena: bool = SHARED_ARENA,
    ) -> None:
        import onnxruntime as ort

        self.mm, self.group, self.shared_arena = mm, max(1, group), shared_arena
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or physical_cores()
        options.inter_op_num_threads = 1
        self.spin = spinning_pays(options.intra_op_num_threads) if spin is None else spin
        options.add_session_config_entry("session.intra_op.allow_spinning", str(int(self.spin)))
        # Each session has its own pool: one still spinning after its run would take the
        # cores from the next session's (CPU time 5.3 s spinning, 3.3 s not, budget 70), so
        # a pool stops spinning as its run ends.
        options.add_session_config_entry("session.force_spinning_stop", "1")
        if shared_arena:
            _shared_arena(ort)
            options.add_session_config_entry("session.use_env_allocators", "1")
        else:
            # A session's own arena keeps its largest-ever blocks: without one each run's
            # buffers go back when the run ends.
            options.enable_cpu_mem_arena = False
        _fixed_mmap_threshold()
        self.blocks: list[tuple[Any, dict[str, Any]]] = []
        n = mm.params.n_layer
        for start in range(0, n, self.group):
            graph, weights, _ = build_blocks(mm, range(start, min(n, start + self.group)))
            # OrtValues over the arrays' memory (no copy): views of the mapped file, or Q8_0's
            # split codes and scales; each OrtValue keeps its array alive.
            values = {
                name: ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(a), t)
                for name, (a, t) in weights.items()
            }
            session = ort.InferenceSession(
                graph, options, providers=["CPUExecutionProvider"],
                disabled_optimizers=["ConstantFolding"],
            )  # fmt: skip
            self.blocks.append((session, values))

    def run(self, x: np.ndarray, cos: np.ndarray | None = None, sin: np.ndarray | None = None
            ) -> list[np.ndarray]:  # fmt: skip
        """The last block's x, then each deepstack layer's, as (T, E) float32."""
        import onnxruntime as ort

        def value(a: np.ndarray) -> Any:
            return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a, F32))

        rope = {} if cos is None or sin is None else {"cos": value(cos), "sin": value(sin)}
        h, stack = value(x), []
        last = ort.RunOptions()
        if self.shared_arena:
            # the arena's free chunks go back to the system once the encode is done
            last.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        for i, (session, weights) in enumerate(self.blocks):
            runopt = last if i == len(self.blocks) - 1 else None
            h, *deep = session.run_with_ort_values(None, {"x": h, **rope, **weights}, runopt)
            stack += [np.asarray(d.numpy(), F32) for d in deep]
        return [np.asarray(h.numpy(), F32), *stack]


MMAP_THRESHOLD = 4 << 20
_ARENA: list[bool] = []


def _shared_arena(ort: Any) -> None:
    """One CPU arena in ORT's environment for every tower session that asks for it (once per
    process): the blocks run one after another, so one arena holds one block's buffers, reused
    by the next block and the next encode instead of fresh pages faulted in each time."""
    if _ARENA:
        return
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0,
                             ort.OrtMemType.DEFAULT)  # fmt: skip
    # max memory: none; extend: exactly as requested (1), not the next power of two
    ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))
    _ARENA.append(True)


def _fixed_mmap_threshold() -> None:
    """glibc: serve allocations of 4 MB and up from fresh mappings, returned when freed.

    A block's activations are 7-30 MB (Gemma 4 at budget 280: 2,394 x 3,072 float32). glibc
    raises its mmap threshold to the largest chunk freed so far (up to 32 MB), after which such
    buffers come from the heap and, freed, stay there fragmented: the encode peaked at 1.0-1.1
    GB, 1.4x libmtmd's 750 MB, against 0.63-0.66 GB with the threshold fixed. Process-wide and
    harmless elsewhere (big buffers only); a no-op off glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD; setting it ends the sliding
    except (OSError, AttributeError):
        return


def tower_for(
    mm: Mmproj,
    threads: int | None = None,
    group: int = GROUP,
    spin: bool | None = None,
    shared_arena: bool = SHARED_ARENA,
) -> OrtTower | None:
    """An `OrtTower` for ``mm``, or None where ONNX Runtime is missing or a block matrix has a
    type the graph does not widen (the numpy encoder runs those)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    if any(n.startswith("v.blk.") and t not in _GRAPH_TYPES for n, t in mm.matrix_types().items()):
        return None
    return OrtTower(mm, threads, group, spin, shared_arena)


def _cos_sin(angles: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(T, 1, d) cos and sin of each part's angles, each part's pairs as NEOX halves."""
    full = np.concatenate([np.concatenate([a, a], axis=1) for a in angles], axis=1)
    return np.cos(full)[:, None, :].astype(F32), np.sin(full)[:, None, :].astype(F32)


def encode_fast(tower: OrtTower, image: Prepared) -> np.ndarray:
    """(n_tokens, out_width) float32: `engine.vision.encoders.encode`'s rows, blocks in ORT."""
    mm = tower.mm
    kind = mm.params.projector
    if kind == "gemma3":
        x = tower.run(enc.gemma3_embed(mm, image))[0]
        out = enc.gemma3_finish(mm, x, image)
    elif kind == "gemma4v":
        x, ax, ay = enc.gemma4v_embed(mm, image)
        out = enc.gemma4v_finish(mm, tower.run(x, *_cos_sin([ax, ay]))[0], image)
    else:
        x, angles = enc.qwen3vl_embed(mm, image)
        ys = tower.run(x, *_cos_sin([angles]))
        out = enc.qwen3vl_finish(mm, ys[0], ys[1:])
    assert out.shape == (image.n_tokens, mm.out_width), (out.shape, image.n_tokens)
    return out
