"""Synthetic GGUF models for tests and benchmarks: random weights in the exact layouts llama.cpp
loads, per family (dense, MoE, Qwen3.5 hybrid, Gemma 4) and real-size generated vocabularies.
Not part of the product: engine/ and app/ never import it."""
