"""Compute kernels of our own that read a GGUF's quantized blocks where they lie (mapped).

Owns `experts` (the routed-expert feed-forward of a mixture-of-experts layer, in C, over the
file's own expert tensors) and `build` (compiling and loading that C library). Does not own
graph building (`engine.fastpath`) or the GGUF reader (`engine.gguf`).
"""
