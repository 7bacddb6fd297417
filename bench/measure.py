"""One GGUF, one contender, one child process: the figures behind `bench --synthetic/--requantized`.

Owns what each child measures and how the parent starts it (`run_child`). Children:

- ``engine-convert``: removes the file's cached fast-path graph, then times the first open
  (`engine.runners.fast_open.fast_runner_or_reason`: the conversion) and reports whether the fast
  path took the file, and the reason when it did not;
- ``engine``: the second open (graph cached), prefill of a fixed 128-token prompt and greedy decode
  of N tokens through the `OnnxRunner` itself;
- ``llama.cpp``: llama-cpp-python on the same file (n_threads = physical cores, n_ctx 2048, its
  default OpenMP policy), the same prompt ids and greedy decode, streamed; a logits processor
  time-stamps every sampling step (so prefill and decode split exactly) and masks end-of-generation
  tokens (random models would stop early).

Both sides mask the same token ids (``blocked``: control tokens and EOS, saved by the parent as a
``.npy``), see the same ids without BOS, warm up once on other ids, and count decode as N
single-token forwards. Every child reports its own peak RSS. Given the engine's greedy ids
(``follow``), the llama.cpp child, after its timed run, also feeds them to llama.cpp one by one
and reports its masked pick at each position and its logit gap to the engine's token there
(`follow_stream`): where two free-running greedy streams split, this says whether it was a
near-tie (random-weight files have many). Does not own the rows, the table or
the model files (`bench.synthetic`, `bench.requant`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.peers import llama_cpp_available, peak_rss_mb

PROMPT_TOKENS = 128
WARMUP_IDS = [500 + 37 * i for i in range(8)]
KINDS = ("engine-convert", "engine", "llama.cpp")
FOLLOW_MAX = 129  # positions of the engine's stream llama.cpp is fed (a prompt, then 1-token steps)
NOT_INSTALLED = "not installed (make bench-peers)"


def prompt_ids(n: int = PROMPT_TOKENS) -> list[int]:
    """A fixed prompt: ordinary (non-special) ids of the 49152-token tokenizers every file has."""
    return [100 + (i * 7919) % 40000 for i in range(n)]


def blocked_ids(path: Path) -> np.ndarray:
    """Bool per token id: control tokens and EOS/EOT, which greedy decoding must not pick."""
    import gguf

    reader = gguf.GGUFReader(path)
    types = np.asarray(reader.fields["tokenizer.ggml.token_type"].contents())
    blocked = types == int(gguf.TokenType.CONTROL)
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"):
        if key in reader.fields:
            blocked[int(reader.fields[key].contents())] = True
    return blocked


def current_rss_mb() -> float | None:
    """This process's resident set now (VmRSS), in MiB; None where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next((ln for ln in status if ln.startswith("VmRSS:")), "")
    except OSError:
        return None
    return int(line.split()[1]) / 1024 if line else None


def physical_cores() -> int:
    import psutil

    return max(1, psutil.cpu_count(logical=False) or 1)


# ------------------------------------------------------------------ the engine


def measure_engine_convert(path: Path) -> dict[str, Any]:
    """First open with no cached graph: conversion time, fast path or not (and why)."""
    from engine.fastpath.cache import graph_folder
    from engine.runners.fast_open import fast_runner_or_reason

    shutil.rmtree(graph_folder(path), ignore_errors=True)
    start = time.perf_counter()
    runner, reason = fast_runner_or_reason(path)
    return {
        "fast_path": runner is not None,
        "reason": reason or None,
        "first_open_s": time.perf_counter() - start,
    }


def measure_engine(path: Path, tokens: int, blocked: np.ndarray) -> dict[str, Any]:
    """Second open (graph cached), prefill and greedy decode through the `OnnxRunner`."""
    from engine.runners.fast_open import fast_runner_or_reason

    baseline = current_rss_mb()  # onnxruntime and the engine imported, no model yet
    start = time.perf_counter()
    runner, reason = fast_runner_or_reason(path)
    open_s = time.perf_counter() - start
    if runner is None:
        return {"fast_path": False, "reason": reason, "second_open_s": open_s}

    def pick(logits: np.ndarray) -> int:  # a Runner's numpy logits (engine.runners.base)
        return int(np.where(blocked, -np.inf, logits[-1]).argmax())

    runner.extend(WARMUP_IDS, last_only=True)
    runner.extend(WARMUP_IDS[:1], last_only=True)
    runner.reset()
    prompt = prompt_ids()
    start = time.perf_counter()
    out = [pick(runner.extend(prompt, last_only=True))]
    prefilled = time.perf_counter()
    for _ in range(tokens):
        out.append(pick(runner.extend(out[-1:], last_only=True)))
    end = time.perf_counter()
    return {
        "fast_path": True,
        "second_open_s": open_s,
        "prefill_tokens_per_s": len(prompt) / (prefilled - start),
        "decode_tokens_per_s": tokens / (end - prefilled),
        "dtype": runner.dtype,
        "baseline_rss_mb": baseline,
        "tokens": out,
    }


# ------------------------------------------------------------------ llama.cpp


def measure_llama_cpp(
    path: Path, tokens: int, blocked: np.ndarray, follow: list[int] | None = None
) -> dict[str, Any]:
    """llama.cpp's open, prefill and greedy decode on ``path``, split by sampling timestamps;
    then, untimed, its picks along ``follow`` (`follow_stream`) when given."""
    if not llama_cpp_available():
        return {"error": NOT_INSTALLED}
    from llama_cpp import Llama, LogitsProcessorList

    threads = physical_cores()
    start = time.perf_counter()
    llm = Llama(
        str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False
    )  # fmt: skip
    open_s = time.perf_counter() - start
    stamps: list[float] = []
    picks: list[int] = []

    def mask_and_stamp(_input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        scores[blocked[: len(scores)]] = -np.inf  # candidates are in id order here
        picks.append(int(np.argmax(scores)))
        stamps.append(time.perf_counter())
        return scores

    def complete(ids: list[int], n: int) -> None:
        llm.reset()  # no prefix reuse: every run prefills its whole prompt
        for _chunk in llm.create_completion(
            ids, max_tokens=n, temperature=0.0, repeat_penalty=1.0, stream=True,
            logits_processor=LogitsProcessorList([mask_and_stamp]),
        ):  # fmt: skip
            pass

    complete(WARMUP_IDS, 2)
    stamps.clear()
    picks.clear()
    prompt = prompt_ids()
    start = time.perf_counter()
    complete(prompt, tokens + 1)  # the first pick comes from the prefill; then N decode forwards
    decoded = len(stamps) - 1
    result: dict[str, Any] = {
        "open_s": open_s,
        "prefill_tokens_per_s": len(prompt) / (stamps[0] - start),
        "decode_tokens_per_s": decoded / (stamps[-1] - stamps[0]) if decoded else None,
        "threads": threads,
        "tokens": picks,
    }
    if decoded < tokens:
        result["stopped_early"] = f"{decoded} of {tokens} decode steps"
    if follow:
        result["forced_picks"], result["forced_gaps"] = follow_stream(llm, prompt, follow, blocked)
    return result


def follow_stream(
    llm: Any, prompt: list[int], follow: list[int], blocked: np.ndarray
) -> tuple[list[int], list[float]]:
    """llama.cpp fed ``prompt`` then ``follow`` one id at a time (at most `FOLLOW_MAX`
    positions): its masked greedy pick after the prompt and after each id, and how far its own
    logit of ``follow[i]`` lies below that pick's (0.0 where they are the same id)."""
    import llama_cpp

    picks: list[int] = []
    gaps: list[float] = []
    llm.reset()
    for i, want in enumerate(follow[:FOLLOW_MAX]):
        llm.eval(prompt if i == 0 else [follow[i - 1]])
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),))
        row = np.where(blocked[: len(row)], -np.inf, row)  # (V,)
        picks.append(int(row.argmax()))
        gaps.append(float(row[picks[-1]] - row[want]))
    return picks, gaps


# ------------------------------------------------------------------ child processes


def run_child(
    kind: str,
    path: Path,
    tokens: int = 64,
    blocked: Path | None = None,
    timeout_s: float = 3600,
    follow: list[int] | None = None,
) -> dict[str, Any]:
    """``kind``'s figures from a fresh ``python -m bench.measure`` process (``follow``: the
    engine's greedy ids for the llama.cpp child to be fed, see `follow_stream`).

    The llama.cpp child gets llama.cpp's default OpenMP wait policy (see
    `bench.engine_speed._in_child_with_default_openmp`). A crash, a timeout or an exception
    becomes ``{"error": ...}``.
    """
    env = dict(os.environ)
    if kind == "llama.cpp":
        env["HEARTH_OMP_PASSIVE"] = "0"
        if os.environ.get("HEARTH_OMP_PASSIVE") == "set":  # the policy was ours, not the user's
            env.pop("OMP_WAIT_POLICY", None)
    cmd = [sys.executable, "-m", "bench.measure", kind, str(path), str(tokens)]
    cmd += [str(blocked)] if blocked is not None else []
    cmd += [",".join(map(str, follow[:FOLLOW_MAX]))] if follow and blocked is not None else []
    return json_child(cmd, env, timeout_s)


def json_child(cmd: list[str], env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """The last JSON line ``cmd`` prints, run in a fresh process; ``{"error": ...}`` for a
    timeout, a crash (its signal) or a failure (the last line of its stderr)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return dict(json.loads(lines[-1]))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    if proc.returncode < 0:
        return {"error": f"crashed (signal {-proc.returncode}): {tail}"}
    return {"error": tail}


def main(argv: list[str]) -> int:
    """``python -m bench.measure KIND GGUF [TOKENS [BLOCKED.npy [FOLLOW]]]``: one JSON line
    (FOLLOW: comma-separated ids, llama.cpp only)."""
    kind, path = argv[0], Path(argv[1])
    tokens = int(argv[2]) if len(argv) > 2 else 64
    try:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
        if kind == "engine-convert":
            result = measure_engine_convert(path)
        else:
            blocked = np.load(argv[3]) if len(argv) > 3 else blocked_ids(path)
            if kind == "engine":
                result = measure_engine(path, tokens, blocked)
            else:
                follow = [int(x) for x in argv[4].split(",")] if len(argv) > 4 else None
                result = measure_llama_cpp(path, tokens, blocked, follow)
    except Exception as exc:  # reported in the row; the run goes on
        result = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
