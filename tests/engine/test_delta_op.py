"""Qwen3.5's DeltaNet decode step as the kernel's native op (``HearthDeltaStep``).

The op alone against the gated delta rule written out in numpy (one token: decay the state,
recall, correct by β·(v − recall), read out with q), and its refusal of inputs of mismatched
shapes (an error from the session, not a crash). Then a tiny random qwen35 file at int8: its
graph runs decode steps on the op (inside the If that picks the one-token branch), its
prompt logits are bitwise those of the graph without it (prefill never takes that branch),
and its decode steps stay with the ONNX-ops graph's (``HEARTH_DELTA_OP=0``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from bench.synth.qwen35 import write_tiny_qwen35
from engine.fastpath.cache import MODEL_FILE, graph_folder
from engine.kernels import native
from tests.engine.fast_runner import build_fast_runner

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native kernel ops do not run here")

NV, D = 4, 32


def _session() -> ort.InferenceSession:
    f32 = TensorProto.FLOAT
    names = ["q", "k", "v", "beta", "decay", "past"]  # shapes left open: the op checks them
    node = helper.make_node("HearthDeltaStep", names, ["out", "state"], domain="ai.onnx.contrib")
    graph = helper.make_graph(
        [node], "delta",
        [helper.make_tensor_value_info(n, f32, None) for n in names],
        [helper.make_tensor_value_info("out", f32, None),
         helper.make_tensor_value_info("state", f32, None)],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.contrib", 1)]
    options = ort.SessionOptions()
    options.register_custom_ops_library(native.library_path())
    model = helper.make_model(graph, opset_imports=opsets)
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = {n: rng.standard_normal((1, 1, NV, D)).astype(np.float32) for n in ("q", "k", "v")}
    f["beta"] = rng.uniform(0, 1, (1, 1, NV)).astype(np.float32)
    f["decay"] = -rng.uniform(0, 2, (1, 1, NV)).astype(np.float32)
    f["past"] = rng.standard_normal((1, NV, D, D)).astype(np.float32)
    return f


def _rule(f: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The step in float64, head by head: S·e^g, r = kᵀS, S += k ⊗ β(v − r), o = qᵀS."""
    out, state = np.zeros((NV, D)), np.zeros((NV, D, D))
    for h in range(NV):
        q, k, v = (f[n][0, 0, h].astype(np.float64) for n in ("q", "k", "v"))
        kept = f["past"][0, h].astype(np.float64) * np.exp(float(f["decay"][0, 0, h]))
        delta = (v - k @ kept) * float(f["beta"][0, 0, h])
        state[h] = kept + np.outer(k, delta)
        out[h] = q @ state[h]
    return out.reshape(1, 1, NV, D), state.reshape(1, NV, D, D)


def test_the_op_computes_the_delta_rule() -> None:
    session = _session()
    for seed in range(3):
        feeds = _feeds(seed)
        out, state = session.run(None, feeds)
        want_out, want_state = _rule(feeds)
        assert out.shape == (1, 1, NV, D) and state.shape == (1, NV, D, D)
        np.testing.assert_allclose(state, want_state, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-4)


def test_inputs_of_mismatched_shapes_fail_with_a_message() -> None:
    feeds = _feeds(0)
    feeds["past"] = feeds["past"][:, :, :, : D // 2].copy()  # not a square state
    with pytest.raises(Exception, match="mismatched shapes"):
        _session().run(None, feeds)


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("HEARTH_DELTA_OP", "HEARTH_NATIVE_OPS"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "qwen35-Q8_0.gguf"
    write_tiny_qwen35(path, "Q8_0")
    return path


def _op_types(graph: onnx.GraphProto) -> set[str]:
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found |= _op_types(attr.g)
    return found


def _run(path: Path) -> tuple[np.ndarray, np.ndarray, str | None]:
    runner = build_fast_runner(path, window=256)
    assert runner is not None
    prompt = runner.extend([1, 17, 230, 4051, 99, 12, 7, 811, 3, 45])
    steps = np.concatenate([runner.extend([t]) for t in (5, 901, 33, 2, 77, 1000, 9, 64)])
    return prompt, steps, runner.kernel_ops


def test_int8_qwen35_decodes_on_the_op(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompt, steps, ops = _run(tiny)
    assert ops == "native"
    model = onnx.load(str(graph_folder(tiny) / MODEL_FILE), load_external_data=False)
    assert "HearthDeltaStep" in _op_types(model.graph)
    monkeypatch.setenv("HEARTH_DELTA_OP", "0")
    plain_prompt, plain_steps, _ = _run(tiny)
    assert "HearthDeltaStep" not in _op_types(
        onnx.load(str(graph_folder(tiny) / MODEL_FILE), load_external_data=False).graph
    )
    np.testing.assert_array_equal(prompt, plain_prompt)  # prefill: the chunked branch alike
    cosine = (
        (steps * plain_steps).sum(-1)
        / np.linalg.norm(steps, axis=-1)
        / np.linalg.norm(plain_steps, axis=-1)
    )
    assert float(cosine.min()) > 0.999, cosine
    assert (steps.argmax(-1) == plain_steps.argmax(-1)).mean() >= 0.75
