"""Forward implementations behind the `Runner` protocol: torch, ONNX Runtime, CUDA."""
