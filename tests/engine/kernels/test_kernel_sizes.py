"""The C kernel checks every size it is handed (issue 34, A1): expert tensors that disagree.

A hostile GGUF may give ``ffn_gate_exps`` 1 expert while ``ffn_down_exps`` holds 64, or a bias
one expert's row: the kernel used to take the expert count from the down projection alone and
read gate rows, biases and scales at ``e * stride`` with no length, past the tensor and the
file. Each case runs in a child process whose weights lie at the very end of a mapped file, so
a read past them faults: a SIGSEGV fails the test instead of killing pytest.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType

from engine.errors import CorruptModelError
from engine.kernels import build
from engine.kernels.experts import ExpertSet, QuantMatrix, _mat, routed_ffn

Q = GGMLQuantizationType
needs_kernel = pytest.mark.skipif(not build.available(), reason="no C compiler for the kernel")

# The child: the named tensor holds `held` experts (its bytes the last of a mapped file), the
# others 64; every row routes to expert 63. Prints the outcome's first line.
_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from engine.kernels.experts import ExpertSet, QuantMatrix, routed_ffn

    path, which = sys.argv[1], sys.argv[2]
    E, H, F, Q8 = 64, 256, 256, 8
    row = H // 32 * 34  # a Q8_0 row of 256 inputs

    def matrix(experts, rows, cols):
        data = np.zeros((experts, rows * (cols // 32) * 34), np.uint8)
        data[:, ::34] = 0x3C  # float16 scales of ~1: finite sums
        return QuantMatrix(Q8, data, rows, cols)

    def tail(values):  # the array as the last bytes of a mapped file: nothing mapped after
        raw = np.ascontiguousarray(values)
        with open(path, "wb") as f:
            f.write(raw.tobytes())
        mapped = np.memmap(path, dtype=np.uint8, mode="r")
        return mapped.view(raw.dtype).reshape(raw.shape)

    parts = {"down": matrix(E, H, F), "gate": matrix(E, F, H), "up": matrix(E, F, H)}
    if which == "gate":
        short = matrix(1, F, H)
        parts["gate"] = QuantMatrix(Q8, tail(short.data), F, H)
    elif which in ("gate_bias", "up_bias"):
        parts[which] = tail(np.ones((1, F), np.float32))
    elif which == "down_bias":
        parts[which] = tail(np.ones((1, H), np.float32))
    elif which == "out_scale":
        parts[which] = tail(np.ones(1, np.float32))
    elif which == "rows":  # up's bytes hold half its rows
        half = matrix(E, F // 2, H)
        parts["up"] = QuantMatrix(Q8, tail(half.data), F, H)
    x = np.ones((4, H), np.float32)
    ids = np.full((4, 2), E - 1, np.int64)
    ids[:, 0] = 0
    try:
        routed_ffn(x, ids, np.full((4, 2), 0.5, np.float32), ExpertSet(**parts), threads=1)
        print("computed")
    except RuntimeError as exc:
        print("refused:", exc)
    """
)


@needs_kernel
@pytest.mark.parametrize(
    "which", ["gate", "gate_bias", "up_bias", "down_bias", "out_scale", "rows"]
)
def test_a_short_expert_tensor_is_refused_not_read_past(which: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "tail.bin"), which],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"the kernel crashed ({done.returncode}): {done.stderr[-800:]}"
    assert done.stdout.startswith("refused: "), done.stdout + done.stderr[-800:]
    assert "out of range" in done.stdout


def _experts(e_gate: int = 4, e_up: int = 4, gate_bias_rows: int = 4) -> ExpertSet:
    def matrix(experts: int) -> QuantMatrix:
        return QuantMatrix(int(Q.Q8_0), np.zeros((experts, 64 * 2 * 34), np.uint8), 64, 64)

    bias = np.zeros((gate_bias_rows, 64), np.float32)
    return ExpertSet(down=matrix(4), gate=matrix(e_gate), up=matrix(e_up), gate_bias=bias)


@needs_kernel
def test_the_native_binding_refuses_experts_that_disagree() -> None:
    """The op's binding checks at open what each call would: the file is refused when it
    opens, with a reason, rather than at its first token."""
    from engine.kernels import native

    native.bind_experts("sizes-test", {0: _experts()}, threads=1)  # agreeing: bound
    native.unbind(native.experts_prefix("sizes-test"))
    for bad in (_experts(e_gate=1), _experts(e_up=2), _experts(gate_bias_rows=1)):
        with pytest.raises(CorruptModelError, match=r"layer 0.*out of range"):
            native.bind_experts("sizes-test", {0: bad}, threads=1)
    short = QuantMatrix(int(Q.Q8_0), np.zeros((1, 100), np.uint8), 64, 64)
    with pytest.raises(CorruptModelError, match=r"matrix attn_q\.weight"):
        native.bind_matrices("sizes-test", {"attn_q.weight": short}, threads=1)


@needs_kernel
def test_the_c_entry_points_check_what_python_would() -> None:
    """Called straight (a caller bug past the Python wrapper): an expert past a matrix's
    count, or bytes short of its rows, is -1, never a read."""
    lib = build.library()
    assert lib is not None
    m = QuantMatrix(int(Q.Q8_0), np.zeros((2, 64 * 2 * 34), np.uint8), 64, 64)
    x, y = np.ones((1, 64), np.float32), np.empty((1, 64), np.float32)
    for expert, mat in ((2, m), (-1, m), (0, QuantMatrix(m.qtype, m.data[:, :100], 64, 64))):
        h = _mat(QuantMatrix(mat.qtype, np.ascontiguousarray(mat.data), 64, 64))
        rc = lib.hearth_matmul(ctypes.byref(h), expert, x.ctypes.data, 1, y.ctypes.data, 1)
        assert rc == -1, (expert, mat.data.shape)
    ex = _experts()
    ids = np.array([[3]], np.int64)
    assert routed_ffn(x, ids, np.ones((1, 1), np.float32), ex, threads=1).shape == (1, 64)
    with pytest.raises(RuntimeError, match="out of range"):
        routed_ffn(x, ids, np.ones((1, 1), np.float32), _experts(e_gate=3), threads=1)


@needs_kernel
def test_experts_the_kernel_refuses_stay_unmapped() -> None:
    """A refused binding leaves nothing held: the file's experts are not kept mapped by a
    runner that never opened."""
    from engine.fastpath import expert_op
    from engine.kernels import native

    if not native.serves():
        pytest.skip("the native ops do not serve here")
    with pytest.raises(CorruptModelError, match="layer 0"):
        expert_op._REGISTRY.hold("refused-test", lambda: {0: _experts(e_gate=1)}, 1)
    assert "refused-test" not in expert_op.mapped_keys()
