"""A Qwen3.5 DeltaNet layer's decode step as the kernel's native op (``HearthDeltaNet``).

The op alone against the layer's middle written out in numpy, float64 (causal conv and SiLU,
L2-normalised q/k heads tiled onto the value heads, the gates, the gated delta rule, the
gated RMSNorm), and its refusal of inputs of mismatched shapes (an error from the session,
not a crash). Then a tiny random qwen35 file at int8: its graph runs decode steps on the op
(inside the If that picks the one-token branch) and its prompts on ``HearthDeltaRun``
(test_delta_run.py), and both stay with the ONNX-ops graph's (``HEARTH_DELTA_OP=0``: the
recurrent step and the chunked rule, whose sums round apart).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from bench.synth.qwen35 import write_tiny_qwen35
from engine.fastpath.cache import MODEL_FILE, graph_folder
from engine.kernels import native
from tests.engine.support.fast_runner import build_fast_runner
from tests.engine.support.native_op import single_op_session

pytestmark = pytest.mark.skipif(not native.serves(), reason="the native kernel ops do not run here")

NK, NV, D, TAPS, EPS = 2, 4, 32, 4, 1e-6
C = (2 * NK + NV) * D
NAMES = ["proj", "gates", "conv", "ssm", "w", "dt", "A", "norm", "eps"]


def _session() -> ort.InferenceSession:
    return single_op_session("HearthDeltaNet", NAMES, ["out", "conv_state", "ssm_state"])


def _parts(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {
        "x": normal(1, 1, C), "z": normal(1, 1, NV * D), "b": normal(1, 1, NV),
        "a": normal(1, 1, NV), "conv": normal(1, TAPS - 1, C), "ssm": normal(1, NV, D, D),
        "w": normal(C, TAPS, scale=0.5), "dt": normal(NV), "norm": normal(D),
        "A": -rng.uniform(0.5, 8, NV).astype(np.float32), "eps": np.array([EPS], np.float32),
    }  # fmt: skip


def _feeds(parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The op's inputs: the two projections whole (q|k|v then z; β's logits then a)."""
    feeds = {n: v for n, v in parts.items() if n not in ("x", "z", "b", "a")}
    feeds["proj"] = np.concatenate([parts["x"], parts["z"]], axis=-1)
    feeds["gates"] = np.concatenate([parts["b"], parts["a"]], axis=-1)
    return feeds


def _layer(f: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The step in float64, written out head by head."""
    f64 = {n: v.astype(np.float64) for n, v in f.items()}
    window = np.concatenate([f64["conv"][0], f64["x"][0]])  # (TAPS, C)
    conv = (window.T * f64["w"]).sum(-1)
    conv = conv / (1 + np.exp(-conv))
    q_all, k_all, v_all = np.split(conv, [NK * D, 2 * NK * D])
    out, state = np.zeros((NV, D)), np.zeros((NV, D, D))
    for h in range(NV):
        q, k = q_all.reshape(NK, D)[h % NK], k_all.reshape(NK, D)[h % NK]
        q = q / np.sqrt((q * q).sum() + 1e-6) / np.sqrt(D)
        k = k / np.sqrt((k * k).sum() + 1e-6)
        beta = 1 / (1 + np.exp(-f64["b"][0, 0, h]))
        decay = np.log1p(np.exp(f64["a"][0, 0, h] + f64["dt"][h])) * f64["A"][h]
        kept = f64["ssm"][0, h] * np.exp(decay)
        delta = (v_all.reshape(NV, D)[h] - k @ kept) * beta
        state[h] = kept + np.outer(k, delta)
        o = q @ state[h]
        z = f64["z"][0, 0, h * D : (h + 1) * D]
        out[h] = o / np.sqrt((o * o).mean() + EPS) * f64["norm"] * z / (1 + np.exp(-z))
    slid = np.concatenate([f["conv"][0, 1:], f["x"][0]])[None]
    return out.reshape(1, 1, NV * D), slid, state.reshape(1, NV, D, D)


def test_the_op_computes_the_layer_step() -> None:
    session = _session()
    for seed in range(3):
        parts = _parts(seed)
        out, conv_state, ssm_state = session.run(None, _feeds(parts))
        want_out, want_conv, want_ssm = _layer(parts)
        assert out.shape == want_out.shape and ssm_state.shape == want_ssm.shape
        np.testing.assert_array_equal(conv_state, want_conv)  # a copy: exact
        np.testing.assert_allclose(ssm_state, want_ssm, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("name", "bad"),
    [("ssm", lambda v: v[:, :, :, : D // 2].copy()),  # not a square state
     ("proj", lambda v: v[:, :, :-D].copy()),  # channels that are not q | k | v | z
     ("gates", lambda v: v[:, :, :-1].copy()),  # not two per value head
     ("w", lambda v: v[:, :-1].copy())],  # taps that are not the conv state's
)  # fmt: skip
def test_inputs_of_mismatched_shapes_fail_with_a_message(name: str, bad: object) -> None:
    feeds = _feeds(_parts(0))
    feeds[name] = bad(feeds[name])  # type: ignore[operator]
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
    assert {"HearthDeltaNet", "HearthDeltaRun"} <= _op_types(model.graph)
    monkeypatch.setenv("HEARTH_DELTA_OP", "0")
    plain_prompt, plain_steps, _ = _run(tiny)
    assert "HearthDeltaNet" not in _op_types(
        onnx.load(str(graph_folder(tiny) / MODEL_FILE), load_external_data=False).graph
    )
    for ours, theirs in ((prompt, plain_prompt), (steps, plain_steps)):
        norms = np.linalg.norm(ours, axis=-1) * np.linalg.norm(theirs, axis=-1)
        cosine = (ours * theirs).sum(-1) / norms
        assert float(cosine.min()) > 0.999, cosine
        assert (ours.argmax(-1) == theirs.argmax(-1)).mean() >= 0.75
