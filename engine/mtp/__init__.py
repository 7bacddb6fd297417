"""Qwen3.5's multi-token-prediction block as a speculative drafter (`engine.mtp.drafter`)."""
