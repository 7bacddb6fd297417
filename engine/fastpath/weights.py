"""Streaming the fast path's initializers into one external-data file beside the graph.

Owns `WeightFile`: each array is appended to ``weights.bin`` at a page-aligned offset (so ONNX
Runtime can map it instead of copying) and becomes a `TensorProto` that points there. The
graph itself stays a small protobuf, whatever the model's size (protobuf caps a message at
2 GB), and the conversion holds at most one tensor's arrays in memory (plus what a
`engine.fastpath.pipeline.RepackPipeline` repacks ahead, when the conversion runs one: the
graph builder takes its weights from ``pipeline``). Large arrays are written in slices of
`WRITE_BYTES`, calling ``tick`` between them, so progress moves while a big tensor is written.
Does not own what the arrays are (`engine.gguf.repack`) or how the graph uses them
(`engine.fastpath.graph`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from engine.fastpath.pipeline import RepackPipeline

ALIGN = 4096  # ORT maps external data whose offset is a multiple of the page size
WRITE_BYTES = 32 << 20  # a tick between slices this large keeps progress moving


class WeightFile:
    """Appends arrays to ``path``; `tensor` returns the TensorProto that refers to each."""

    def __init__(
        self,
        path: Path,
        pipeline: RepackPipeline | None = None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.pipeline = pipeline  # where the graph builder gets repacked weights, if anywhere
        self._tick = tick or (lambda: None)
        self._file = path.open("wb")
        self.offset = 0

    def tensor(self, name: str, array: np.ndarray) -> Any:
        """Write ``array`` (C order) and return an external-data TensorProto named ``name``."""
        from onnx import TensorProto, helper

        data = np.ascontiguousarray(array)
        pad = -self.offset % ALIGN
        if pad:
            self._file.write(b"\0" * pad)
            self.offset += pad
        flat = data.reshape(-1).view(np.uint8)
        for start in range(0, flat.size, WRITE_BYTES):  # raw C-order bytes, no copy
            flat[start : start + WRITE_BYTES].tofile(self._file)
            self._tick()
        proto = TensorProto()
        proto.name = name
        proto.data_type = helper.np_dtype_to_tensor_dtype(data.dtype)
        proto.dims.extend(data.shape)
        proto.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.path.name), ("offset", self.offset)):
            entry = proto.external_data.add()
            entry.key, entry.value = key, str(value)
        entry = proto.external_data.add()
        entry.key, entry.value = "length", str(data.nbytes)
        self.offset += data.nbytes
        return proto

    def close(self) -> None:
        self._file.close()
