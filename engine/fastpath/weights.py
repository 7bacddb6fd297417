"""Streaming the fast path's initializers into one external-data file beside the graph.

Owns `WeightFile`: each array is appended to ``weights.bin`` at a page-aligned offset (so ONNX
Runtime can map it instead of copying) and becomes a `TensorProto` that points there. The
graph itself stays a small protobuf, whatever the model's size (protobuf caps a message at
2 GB), and the conversion holds at most one tensor's arrays in memory. Does not own what the
arrays are (`engine.gguf.repack`) or how the graph uses them (`engine.fastpath.graph`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

ALIGN = 4096  # ORT maps external data whose offset is a multiple of the page size


class WeightFile:
    """Appends arrays to ``path``; `tensor` returns the TensorProto that refers to each."""

    def __init__(self, path: Path) -> None:
        self.path = path
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
        data.tofile(self._file)  # raw C-order bytes, no intermediate copy
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
