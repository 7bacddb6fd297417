"""The kernel's native ONNX Runtime ops (`engine.kernels.native`, `ortops.h`, `ort_abi.h`).

A tiny random qwen3moe Q4_K_M file opened at int8 accuracy runs its ``HearthExperts`` and
``HearthMatMul`` nodes natively, and its prompt and decode logits must equal, bit for bit,
the same graph run through onnxruntime-extensions' Python op (``HEARTH_NATIVE_OPS=0``); its
float-reference graph (accuracy 0) keeps the Python op. With ``HEARTH_KERNEL_MIN_BYTES=0`` a
tiny qwen35 Q8_0 runs every matrix on the native ops (MLPs and DeltaNet's ssm_* included, its
gates with float activations), holds none of them in ``weights.bin`` and stays as close to the
MatMulNBits graph as the other int8 comparisons do. A binding marked dead fails the next step
with a message (no crash), and opening the file again revives it. The float-activation matmul
must match a float64 product of the dequantized weights far closer than the int8 path. And
the `ort_abi.h` slot numbers are checked against the installed ONNX Runtime through ctypes.
"""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType

from bench.synth.moe import write_moe_model
from bench.synth.qwen35 import write_tiny_qwen35
from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.cache import MODEL_FILE, WEIGHTS_FILE, graph_folder
from engine.fastpath.kernel_ops import MODE_FILE
from engine.kernels import native
from engine.kernels.experts import InputForm, matmul
from engine.kernels.reference import expert_matrix
from tests.engine.kernels.test_expert_kernel import random_matrix
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.parity import PROMPT, WINDOW

ROOT = Path(__file__).resolve().parents[3]
STEPS = [5, 901, 33, 2]  # decode steps after the prompt (one row each)
ENV = [
    "HEARTH_NATIVE_OPS",
    "HEARTH_EXPERT_KERNEL",
    "HEARTH_MATRIX_KERNEL",
    "HEARTH_KERNEL_MIN_BYTES",
    "HEARTH_DENSE_KERNEL",
    "HEARTH_DENSE_KERNEL_MIN_BYTES",
    "HEARTH_ATTENTION_OP",
]

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native ops cannot serve here")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("native")
    out = {"moe": root / "qwen3moe-Q4_K_M.gguf", "qwen35": root / "qwen35-Q8_0.gguf"}
    write_moe_model(out["moe"], "qwen3moe", "Q4_K_M", reference=False)
    write_tiny_qwen35(out["qwen35"], "Q8_0")
    return out


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def _open(path: Path, accuracy: int = ACCURACY_INT8) -> Any:
    runner = build_fast_runner(path, accuracy=accuracy, window=WINDOW)
    assert runner is not None
    return runner


def _logits(runner: Any) -> np.ndarray:
    """The prompt's logits and those of each of `STEPS` decoded after it, (T, V)."""
    prompt = runner.extend(PROMPT)
    return np.concatenate([prompt, *(runner.extend([t]) for t in STEPS)])


def _mode(path: Path, accuracy: int) -> Any:
    return json.loads((graph_folder(path, accuracy) / MODE_FILE).read_text(encoding="utf-8"))


def test_native_ops_compute_what_the_python_op_computes_bitwise(
    cache_dir: Path, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = files["moe"]
    monkeypatch.setenv("HEARTH_ATTENTION_OP", "0")  # the Python op has no attention op
    fast = _open(path)
    assert fast.kernel_ops == "native"
    assert fast._experts is not None and fast._matrices is not None  # both ops in the graph
    folder = graph_folder(path, ACCURACY_INT8)
    assert _mode(path, ACCURACY_INT8) == {"exact": False}
    monkeypatch.setenv("HEARTH_NATIVE_OPS", "0")
    slow = _open(path)
    assert slow.kernel_ops == "python"
    assert graph_folder(path, ACCURACY_INT8) == folder  # one graph; only the library differs
    got, want = _logits(fast), _logits(slow)
    assert got.shape == (len(PROMPT) + len(STEPS), want.shape[1])
    assert np.array_equal(got, want), float(np.abs(got - want).max())


def test_a_float_reference_graph_keeps_the_python_op(
    cache_dir: Path, files: dict[str, Path]
) -> None:
    runner = _open(files["moe"], accuracy=0)
    assert runner.kernel_ops == "python"
    assert _mode(files["moe"], 0) == {"exact": True}
    assert np.isfinite(runner.extend(PROMPT[:3])).all()


def _kernel_nodes(folder: Path) -> list[tuple[str, list[str], int]]:
    """(op type, matrix names, float attribute) of the graph's kernel op nodes."""
    return [(op, names, a.get("float", 0)) for op, names, a in _kernel_node_attrs(folder)]


def _kernel_node_attrs(folder: Path) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(op type, matrix names, int attributes) of the graph's kernel op nodes."""
    import onnx

    model = onnx.load(str(folder / MODEL_FILE), load_external_data=False)
    out = []
    for node in model.graph.node:
        if node.op_type in ("HearthMatMul", "HearthExperts", "MatMulNBits"):
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            names = a["names"].decode().split(",") if "names" in a else []
            ints = {k: int(v) for k, v in a.items() if isinstance(v, int)}
            out.append((node.op_type, names, ints))
    return out


def test_every_matrix_mode_runs_all_matrices_natively(
    cache_dir: Path, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.gguf.header import read_gguf_summary

    path = files["qwen35"]
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")  # a tiny file counts as a big one
    monkeypatch.setenv("HEARTH_DELTA_OP", "0")  # its own native op (test_delta_op.py)
    monkeypatch.setenv("HEARTH_ATTENTION_OP", "0")  # likewise (test_attention_op.py)
    outs, folders, sizes = {}, {}, {}
    for on in (True, False):  # inspected in turn: opening the other prunes this folder
        monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "1" if on else "0")
        runner = _open(path)
        assert runner.kernel_ops == ("native" if on else None)
        folders[on] = graph_folder(path, ACCURACY_INT8)
        sizes[on] = (folders[on] / WEIGHTS_FILE).stat().st_size
        if on:
            nodes, layers = _kernel_nodes(folders[on]), runner.hparams.n_layers
        outs[on] = _logits(runner)
    assert folders[True] != folders[False]  # the mode is part of the cache key
    assert nodes and {op for op, _, _ in nodes} == {"HearthMatMul"}  # no MatMulNBits left
    on_op = {n: f for _, names, f in nodes for n in names}
    tensors = read_gguf_summary(path).tensors
    ffn = [f"blk.{i}.ffn_{m}.weight" for i in range(layers) for m in ("gate", "up", "down")]
    assert all(on_op.get(n) == 0 for n in ffn), ffn  # the MLPs (not MTP's), int8 activations
    ssm = {n: f for n, f in on_op.items() if ".ssm_" in n}
    gates = {f for n, f in ssm.items() if ".ssm_out." not in n}
    out_acts = {f for n, f in ssm.items() if ".ssm_out." in n}
    assert gates == {1} and out_acts == {0}  # alpha, beta: float activations; out: int8
    mapped = sum(t.nbytes for t in tensors if t.name in on_op and t.name != "token_embd.weight")
    assert sizes[False] - sizes[True] >= mapped > 0
    got, want = outs[True], outs[False]
    cosine = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
    # As test_matmul_op's int8 comparison: Q8_0 rows take per-32 int8 activations on both
    # paths. (K-quant MLPs take llama.cpp's per-256 ones: on this random tiny model's
    # Q4_K_M, 0.956 at worst against MatMulNBits, 0.968 against the float graph.)
    assert float(cosine.min()) > 0.995, cosine
    assert float((got.argmax(-1) == want.argmax(-1)).mean()) >= 0.75


@pytest.mark.parametrize(("arch", "act"), [("llama", "silu"), ("gemma3", "gelu_tanh")])
def test_the_down_projection_joins_the_mlp_halves_itself(
    arch: str, act: str, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every-matrix mode: ffn_down's node reads gate | up and applies act(gate) · up itself
    (no Split, activation and Mul between the two MLP nodes). Natively at int8 it stays with
    the MatMulNBits graph (which has those ops); the float-reference graph, on the Python op,
    still matches transformers."""
    from bench.synth.core import write_tiny_model
    from engine.kernels.experts import ACTIVATIONS
    from tests.engine.support.parity import assert_matches_reference

    path = cache_dir / f"{arch}-Q8_0.gguf"
    reference = write_tiny_model(path, arch, "Q8_0")
    monkeypatch.setenv("HEARTH_KERNEL_MIN_BYTES", "0")
    monkeypatch.setenv("HEARTH_ATTENTION_OP", "0")  # its own native op (test_attention_op.py)
    outs = {}
    for on in (True, False):
        monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "1" if on else "0")
        runner = _open(path)
        assert runner.kernel_ops == ("native" if on else None)
        if on:
            nodes = _kernel_node_attrs(graph_folder(path, ACCURACY_INT8))
            downs = {names[0]: a.get("glu") for _, names, a in nodes if ".ffn_down." in names[0]}
            assert len(downs) == runner.hparams.n_layers
            assert set(downs.values()) == {ACTIVATIONS[act]}
            rest = {a.get("glu") for _, names, a in nodes if ".ffn_down." not in names[0]}
            assert rest == {-1}  # every other node reads its input as it is
        outs[on] = _logits(runner)
    got, want = outs[True], outs[False]
    cosine = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
    assert float(cosine.min()) > 0.995, cosine
    assert float((got.argmax(-1) == want.argmax(-1)).mean()) >= 0.75
    monkeypatch.setenv("HEARTH_MATRIX_KERNEL", "1")
    exact = _open(path, accuracy=0)
    assert exact.kernel_ops == "python"
    assert_matches_reference(exact, reference)


def test_a_dead_binding_fails_the_step_with_a_message_and_revives(
    cache_dir: Path, files: dict[str, Path]
) -> None:
    path = files["moe"]
    runner = _open(path)
    assert runner._experts is not None and runner._matrices is not None
    want = runner.extend(PROMPT)
    for prefix in (native.experts_prefix(runner._experts.key),
                   native.matrices_prefix(runner._matrices.key)):  # fmt: skip
        native.unbind(prefix)
        with pytest.raises(Exception, match="no longer mapped"):
            runner.extend([5])
        again = _open(path)  # opening the file again binds its weights again
        runner.reset()
        assert np.array_equal(runner.extend(PROMPT), want)
        del again
        gc.collect()
    runner.reset()
    assert np.array_equal(runner.extend(PROMPT), want)  # the revived bindings outlive `again`


Q = GGMLQuantizationType


@pytest.mark.parametrize("qt", [Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.Q4_1, Q.Q5_0], ids=lambda t: t.name)
@pytest.mark.parametrize("n", [1, 5], ids=["one row", "rows"])
@pytest.mark.parametrize(("form", "bound"), [("float", 1e-5), ("int8x2", 1e-4)])
def test_finer_activations_match_the_float_product(
    qt: GGMLQuantizationType, n: int, form: InputForm, bound: float
) -> None:
    """The float form and int8 twice (the value, then the first grid's remainder: ~15-bit
    activations) against float64: far closer than one int8 grid, on every type's decoder."""
    rng = np.random.default_rng(int(qt) * 10 + n)
    m = random_matrix(rng, qt, 2, 64, 512)
    x = rng.standard_normal((n, 512)).astype(np.float32)
    for e in range(2):
        want = x.astype(np.float64) @ expert_matrix(m, e).astype(np.float64).T
        scale = float(np.abs(want).max())
        finer = float(np.abs(matmul(m, e, x, threads=2, form=form) - want).max()) / scale
        int8 = float(np.abs(matmul(m, e, x, threads=2) - want).max()) / scale
        assert finer < bound, finer
        assert finer * 20 < int8, (finer, int8)  # the form is honoured: far closer than int8


def test_an_unknown_input_form_is_refused_by_name() -> None:
    m = random_matrix(np.random.default_rng(3), Q.Q8_0, 1, 4, 64)
    with pytest.raises(ValueError, match="input form 'int16' is not one of int8, float, int8x2"):
        matmul(m, 0, np.ones((1, 64), np.float32), form="int16")  # type: ignore[arg-type]


ABI_CHECK = r"""
import ctypes as C, glob, json, sys
s = json.loads(sys.argv[2])
lib = C.CDLL(glob.glob(sys.argv[1] + "/libonnxruntime.so.*")[0])
lib.OrtGetApiBase.restype = C.POINTER(C.c_void_p * 2)
get_api = C.CFUNCTYPE(C.POINTER(C.c_void_p * 128), C.c_uint32)(lib.OrtGetApiBase().contents[0])
api, P, I64 = get_api(s["ORT_API_WANTED"]).contents, C.c_void_p, C.POINTER(C.c_int64)
def fn(slot, res, *args):
    return C.CFUNCTYPE(res, *args)(api[s.get(slot, slot)])
def ok(status):
    assert status is None, fn(2, C.c_char_p, P)(status)
st = fn("CreateStatus", P, C.c_int, C.c_char_p)(s["ORT_RUNTIME_EXCEPTION"], b"slot check")
out = {"code": fn(1, C.c_int, P)(st), "message": fn(2, C.c_char_p, P)(st).decode()}  # 1, 2:
# GetErrorCode, GetErrorMessage (like 49, 69, 71, 94, 96 below: slots the header leaves out)
fn("ReleaseStatus", None, P)(st)
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
before, text = rss(), b"x" * 4000  # (the runtime keeps 4 KiB of a message)
for _ in range(40000):  # 160 MB were they not freed
    fn("ReleaseStatus", None, P)(fn("CreateStatus", P, C.c_int, C.c_char_p)(1, text))
out["freed"] = rss() - before < 40 << 20
info, name, value, shape, data, rank = P(), C.c_char_p(), P(), P(), P(), C.c_size_t()
ok(fn(69, P, C.c_int, C.c_int, C.POINTER(P))(0, 0, C.byref(info)))  # CreateCpuMemoryInfo
ok(fn(71, P, P, C.POINTER(C.c_char_p))(info, C.byref(name)))  # MemoryInfoGetName
buf, dims, got = (C.c_float * 6)(), (C.c_int64 * 2)(2, 3), (C.c_int64 * 2)()
ok(fn(49, P, P, P, C.c_size_t, I64, C.c_size_t, C.c_int, C.POINTER(P))(
    info, C.cast(buf, P), 24, dims, 2, s["ORT_TENSOR_FLOAT"], C.byref(value)))
ok(fn("GetTensorTypeAndShape", P, P, C.POINTER(P))(value, C.byref(shape)))
ok(fn("GetDimensionsCount", P, P, C.POINTER(C.c_size_t))(shape, C.byref(rank)))
ok(fn("GetDimensions", P, P, I64, C.c_size_t)(shape, got, 2))
fn("ReleaseTensorTypeAndShapeInfo", None, P)(shape)
ok(fn("GetTensorMutableData", P, P, C.POINTER(P))(value, C.byref(data)))
domain = P()
ok(fn("CreateCustomOpDomain", P, C.c_char_p, C.POINTER(P))(b"ai.onnx.contrib", C.byref(domain)))
out.update(memory=name.value.decode(), dims=list(got)[: rank.value],
           data=data.value == C.addressof(buf), domain=bool(domain.value))
fn(96, None, P)(value)  # ReleaseValue
fn(94, None, P)(info)  # ReleaseMemoryInfo
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libonnxruntime.so, /proc")
def test_the_abi_slots_are_the_runtimes() -> None:
    """`ort_abi.h`'s numbers, read from its text, call the right functions of the installed
    runtime (a wrong slot returns nonsense or crashes the child process). Its KernelInfo and
    KernelContext slots need a running kernel: the native runs above exercise them."""
    import onnxruntime

    text = (ROOT / "engine" / "kernels" / "ort_abi.h").read_text(encoding="utf-8")
    slots = {m[1]: int(m[2]) for m in re.finditer(r"\bORT_SLOT_(\w+) = (\d+)", text)}
    consts = {m[1]: int(m[2]) for m in re.finditer(r"\b(ORT_[A-Z0-9_]+) = (\d+)", text)}
    checked = {"CreateStatus", "ReleaseStatus", "GetTensorTypeAndShape", "GetDimensionsCount",
               "GetDimensions", "ReleaseTensorTypeAndShapeInfo", "GetTensorMutableData",
               "CreateCustomOpDomain"}  # fmt: skip
    assert checked <= set(slots)
    capi = Path(onnxruntime.__file__).parent / "capi"
    proc = subprocess.run(
        [sys.executable, "-c", ABI_CHECK, str(capi), json.dumps({**consts, **slots})],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"code": consts["ORT_RUNTIME_EXCEPTION"], "message": "slot check", "freed": True,
                   "memory": "Cpu", "dims": [2, 3], "data": True, "domain": True}  # fmt: skip
