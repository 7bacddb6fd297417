"""One kernel custom op alone in an ONNX Runtime session, for the ops' own tests."""

from __future__ import annotations

import onnxruntime as ort
from onnx import TensorProto, helper

from engine.kernels import native


def single_op_session(
    op: str, inputs: list[str], outs: list[str], **attrs: int
) -> ort.InferenceSession:
    """A session running ``op`` (domain ai.onnx.contrib) on float inputs, shapes left open
    (the op checks them), with the kernel's custom-op library registered."""
    f32 = TensorProto.FLOAT
    node = helper.make_node(op, inputs, outs, domain="ai.onnx.contrib", **attrs)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, f32, None) for n in inputs],
        [helper.make_tensor_value_info(n, f32, None) for n in outs],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.contrib", 1)]
    options = ort.SessionOptions()
    options.register_custom_ops_library(native.library_path())
    model = helper.make_model(graph, opset_imports=opsets)
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
