"""Side-by-side GPU decode benchmark: `engine.runners.cuda_runner.StaticCacheRunner` next to
transformers ``generate()`` on the same weights and prompt.

`python -m bench.cuda [--model bundled] [--tokens 256] [--device cuda]` prints one JSON object
(greedy decode tokens/s of each and the speed-up). `bench/gpu.sh` runs it when a GPU is lent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

from engine.runners.cuda_runner import StaticCacheRunner


def bench(model_name: str, tokens: int, device: str) -> dict[str, Any]:
    """Greedy decode tok/s: this runner vs transformers generate(), same weights and prompt."""
    from engine.loader import load_model

    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    loaded = load_model(model_name, dtype=dtype, device=device, context_window=2048)
    prompt = loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write a short story about a lighthouse keeper."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    ids = loaded.tokenizer.encode(prompt, add_special_tokens=False)
    started = time.perf_counter()
    runner = StaticCacheRunner(
        loaded.model, context_window=2048, logits_on_device=True
    )  # compiles on first decode step
    engine = _greedy(runner, ids, 8)  # warm-up: compile + capture
    warmup_s = time.perf_counter() - started
    engine = _greedy(runner, ids, tokens)
    hf = _hf_generate(loaded.model, ids, tokens)
    return {
        "device": device,
        "dtype": dtype,
        "engine_decode_tokens_per_s": engine,
        "transformers_generate_tokens_per_s": hf,
        "speedup": engine / hf if hf else None,
        "compile_and_warmup_s": warmup_s,
        "new_tokens": tokens,
    }


def _greedy(runner: StaticCacheRunner, ids: list[int], tokens: int) -> float:
    runner.reset()
    logits = runner.extend(ids, last_only=True)[0]
    _sync()
    start = time.perf_counter()
    for _ in range(tokens):
        token = int(logits.argmax())  # sampling on device; one scalar comes back
        logits = runner.extend([token], last_only=True)[0]
    _sync()
    return tokens / (time.perf_counter() - start)


def _hf_generate(model: Any, ids: list[int], tokens: int) -> float:
    input_ids = torch.tensor([ids], device=model.device)
    kwargs = {"do_sample": False, "max_new_tokens": tokens, "min_new_tokens": tokens}
    model.generate(input_ids, **{**kwargs, "max_new_tokens": 8, "min_new_tokens": 8})
    _sync()
    start = time.perf_counter()
    model.generate(input_ids, **kwargs)
    _sync()
    return tokens / (time.perf_counter() - start)


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cuda")
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    print(json.dumps(bench(args.model, args.tokens, args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
