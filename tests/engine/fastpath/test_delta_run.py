"""A Qwen3.5 DeltaNet layer's prefill as the kernel's native op (``HearthDeltaRun``).

The op over T tokens against T runs of the decode-step op (``HearthDeltaNet``, itself checked
against a float64 numpy layer in test_delta_op.py), bit for bit: the output rows, the two
states after the run and the two "tail" states ``tail`` tokens before its end (the runner's
checkpoint), or after the first token of a run no longer than ``tail`` (a speculative verify's
rollback point). Head sizes of one, two and four 8-column vectors per block (the blocked rule's
widths), a conv of three and four taps, and runs from one token to past the tail. Then its
refusal of inputs of mismatched shapes and of a head size that is not a multiple of 8. Last,
a tiny int8 qwen35 graph: its prompts run on the op, and a prompt's logits equal those of a
shorter prompt followed by decode steps, bit for bit (the chunked ONNX form rounded apart).
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

NAMES = ["proj", "gates", "conv", "ssm", "w", "dt", "A", "norm", "eps"]
TAIL = 16
RUN_OUTS = ["out", "conv_state", "ssm_state", "tail_conv", "tail_ssm"]


def _session(op: str, outs: list[str], **attrs: int) -> ort.InferenceSession:
    return single_op_session(op, NAMES, outs, **attrs)


def _feeds(nk: int, nv: int, d: int, taps: int, tokens: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = (2 * nk + nv) * d

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {
        "proj": normal(1, tokens, c + nv * d), "gates": normal(1, tokens, 2 * nv),
        "conv": normal(1, taps - 1, c), "ssm": normal(1, nv, d, d, scale=0.3),
        "w": normal(c, taps, scale=0.5), "dt": normal(nv), "norm": normal(d),
        "A": -rng.uniform(0.5, 8, nv).astype(np.float32), "eps": np.array([1e-6], np.float32),
    }  # fmt: skip


def _steps(feeds: dict[str, np.ndarray], tail_at: int) -> list[np.ndarray]:
    """The decode-step op once per token: (rows, conv, ssm, tail conv, tail ssm)."""
    step = _session("HearthDeltaNet", ["out", "conv_state", "ssm_state"])
    conv, ssm, rows, tail = feeds["conv"], feeds["ssm"], [], (feeds["conv"], feeds["ssm"])
    for t in range(feeds["proj"].shape[1]):
        if t == tail_at:
            tail = (conv, ssm)
        one = {"proj": feeds["proj"][:, t : t + 1], "gates": feeds["gates"][:, t : t + 1]}
        out, conv, ssm = step.run(None, {**feeds, **one, "conv": conv, "ssm": ssm})
        rows.append(out)
    if tail_at == feeds["proj"].shape[1]:  # a one-token run: after its first token
        tail = (conv, ssm)
    return [np.concatenate(rows, axis=1), conv, ssm, *tail]


@pytest.mark.parametrize(
    ("nk", "nv", "d", "taps", "tokens"),
    [(2, 4, 32, 4, 1), (2, 4, 32, 4, 2), (2, 4, 32, 4, 5), (2, 4, 32, 4, 40), (1, 2, 48, 3, 17),
     (2, 2, 40, 4, 16), (1, 1, 128, 4, 33)],
)  # fmt: skip
def test_a_run_equals_its_decode_steps_bit_for_bit(
    nk: int, nv: int, d: int, taps: int, tokens: int
) -> None:
    run = _session("HearthDeltaRun", RUN_OUTS, tail=TAIL)
    feeds = _feeds(nk, nv, d, taps, tokens, seed=tokens)
    got = run.run(None, feeds)
    want = _steps(feeds, tokens - TAIL if tokens > TAIL else 1)
    for name, g, w in zip(["out", "conv", "ssm", "tail conv", "tail ssm"], got, want, strict=True):
        assert g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=name)
    assert np.abs(got[0]).max() > 0  # the rows were written


@pytest.mark.parametrize(
    ("name", "bad"),
    [("gates", lambda v: v[:, :-1].copy()),  # another token count than the projection's
     ("proj", lambda v: v[:, :, :-8].copy()),  # channels that are not q | k | v | z
     ("ssm", lambda v: v[:, :, :, :-8].copy())],  # not a square state
)  # fmt: skip
def test_inputs_of_mismatched_shapes_fail_with_a_message(name: str, bad: object) -> None:
    feeds = _feeds(2, 4, 32, 4, 5, seed=0)
    feeds[name] = bad(feeds[name])  # type: ignore[operator]
    run = _session("HearthDeltaRun", RUN_OUTS, tail=TAIL)
    with pytest.raises(Exception, match="mismatched shapes"):
        run.run(None, feeds)


def test_a_head_size_off_the_vector_width_is_refused() -> None:
    feeds = _feeds(1, 1, 36, 4, 3, seed=0)  # 36: not a multiple of the 8-float vectors
    run = _session("HearthDeltaRun", RUN_OUTS, tail=TAIL)
    with pytest.raises(Exception, match="mismatched shapes"):
        run.run(None, feeds)


def _op_types(graph: onnx.GraphProto) -> set[str]:
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found |= _op_types(attr.g)
    return found


def test_a_prompt_equals_a_shorter_one_and_its_decode_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("HEARTH_DELTA_OP", "HEARTH_NATIVE_OPS"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "qwen35-Q8_0.gguf"
    write_tiny_qwen35(path, "Q8_0")
    runner = build_fast_runner(path, window=256)
    assert runner is not None
    model = onnx.load(str(graph_folder(path) / MODEL_FILE), load_external_data=False)
    assert "HearthDeltaRun" in _op_types(model.graph)
    ids = [1, 17, 230, 4051, 99, 12, 7, 811, 3, 45, 5, 901, 33, 2, 77, 1000, 9, 64, 8, 21]
    whole = runner.extend(ids)  # (20, V)
    runner.reset()
    head = runner.extend(ids[:12])
    steps = [runner.extend([t]) for t in ids[12:]]
    np.testing.assert_array_equal(np.concatenate([head, *steps]), whole)
