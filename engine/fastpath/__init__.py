"""The CPU fast path: an ONNX Runtime graph over the GGUF's own quantised weights."""
