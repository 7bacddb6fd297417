"""Side-by-side contenders for `python -m bench engine`: the engine's backends and llama.cpp.

Owns one measurement recipe applied to every contender — the same chat prompt and sampling,
then an 8-turn conversation for the TTFT of turn 8 (prefix reuse) — and runs each contender in
its own subprocess (``python -m bench.peers CONTENDER MODEL``), so its peak RSS is its
own. Each returns a dict: decode/prefill tokens per second, TTFT, TTFT at turn 8, peak RSS.
``python -m bench.peers [--json]`` runs them all and prints the table with ratios.
`compare` runs several and adds each figure's ratio to llama.cpp. llama.cpp is measured only
when `llama_cpp` imports (``make bench-peers`` installs llama-cpp-python). Does not own the
bench command line or its table (`bench.engine_speed`), though `format_table` helps it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
TURNS = [
    f"Tell me one fact about {topic}."
    for topic in ("tea", "rivers", "owls", "bread", "clocks", "maps", "snow", "bees")
]
SAMPLING: dict[str, Any] = {
    "temperature": 0.7,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "seed": 1,
}
REPEAT_PENALTY = 1.1
MAX_TOKENS = 256
TURN_TOKENS = 24
CONTENDERS = ("engine-onnx", "engine-torch", "llama.cpp")
METRICS = ("decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s", "ttft_turn8_s", "peak_rss_mb")


def peak_rss_mb() -> float:
    """This process's peak RSS in MiB: /proc's VmHWM where there is one.

    Not ``ru_maxrss`` on Linux: a child started by (v)fork + exec inherits its parent's peak
    there, so every contender spawned by a bench that had imported torch read ~550 MB.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# ------------------------------------------------------------------ the engine


def measure_engine(model: str, backend: str, dtype: str = "auto") -> dict[str, Any]:
    """The engine (`engine.engine.Engine`) with ``backend`` "onnx" or "torch"."""
    from engine.engine import Engine
    from engine.types import GenerationRequest, Message, SamplingParams

    engine = Engine(model, backend=backend, dtype=dtype, device="cpu")
    params = SamplingParams(
        **SAMPLING, repetition_penalty=REPEAT_PENALTY, max_new_tokens=MAX_TOKENS
    )

    def ask(messages: list[Message], conversation: str, max_tokens: int) -> Any:
        request = GenerationRequest(
            tuple(messages), params.replace(max_new_tokens=max_tokens), conversation
        )
        return list(engine.generate(request))[-1]  # Finished

    done = ask([Message("user", PROMPT)], "single", MAX_TOKENS)
    stats = done.stats
    result = _figures(
        stats.decode_tokens_per_s, stats.prefill_tokens_per_s, stats.ttft_s,
        stats.completion_tokens, stats.prompt_tokens,
    )  # fmt: skip
    ttfts = []
    for reply in _conversation(lambda msgs: ask(msgs, "chat", TURN_TOKENS), Message, TURNS):
        ttfts.append(reply.stats.ttft_s)
    result.update(ttft_turn1_s=ttfts[0], ttft_turn8_s=ttfts[-1])
    result.update(backend=engine.info.backend, dtype=engine.info.dtype)
    engine.close()
    return result


def _conversation(ask: Callable[[list[Any]], Any], message: Any, turns: list[str]) -> Iterator[Any]:
    """User ``turns``, each sent with the whole history; yields each turn's Finished/answer."""
    history: list[Any] = []
    for text in turns:
        history.append(message("user", text))
        reply = ask(history)
        yield reply
        history.append(message("assistant", _text_of(reply)))


def _text_of(reply: Any) -> str:
    return reply.text if hasattr(reply, "text") else str(reply.get("text", ""))


def _figures(
    decode: float, prefill: float, ttft: float, completion: int, prompt: int
) -> dict[str, Any]:
    return {
        "decode_tokens_per_s": decode,
        "prefill_tokens_per_s": prefill,
        "ttft_s": ttft,
        "completion_tokens": completion,
        "prompt_tokens": prompt,
    }


# ------------------------------------------------------------------ llama.cpp


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python imports; ``HEARTH_BENCH_NO_LLAMA_CPP=1`` says no (for tests)."""
    if os.environ.get("HEARTH_BENCH_NO_LLAMA_CPP") == "1":
        return False
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def measure_llama_cpp(
    gguf_path: str,
    threads: int | None = None,
    prompt: str = PROMPT,
    turns: list[str] | None = None,
    max_tokens: int = MAX_TOKENS,
) -> dict[str, Any] | None:
    """llama.cpp through llama-cpp-python on the same GGUF; None when it is not installed.

    ``prompt`` / ``max_tokens`` make the single-turn figures; ``turns`` (8 user messages, each
    sent with the history) the TTFT of turn 1 and turn 8, so `bench.engine_speed` can pass its own.
    """
    if not llama_cpp_available():
        return None
    from llama_cpp import Llama

    from engine.runners.session_options import physical_cores

    n_threads = threads or physical_cores()
    llm = Llama(gguf_path, n_ctx=4096, n_threads=n_threads, n_batch=512, seed=1, verbose=False)
    answer = _llama_stream(llm, [{"role": "user", "content": prompt}], max_tokens)
    result = _figures(
        answer["decode"], answer["prefill"], answer["ttft"], answer["completion"], answer["prompt"]
    )
    ttfts = []
    ask = lambda msgs: _llama_stream(llm, msgs, TURN_TOKENS)  # noqa: E731
    as_dict = lambda role, text: {"role": role, "content": text}  # noqa: E731
    for reply in _conversation(ask, as_dict, turns or TURNS):
        ttfts.append(reply["ttft"])
    result.update(ttft_turn1_s=ttfts[0], ttft_turn8_s=ttfts[-1])
    result.update(backend="llama.cpp", dtype="q4_1", threads=n_threads)
    return result


def _llama_stream(llm: Any, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """One streamed chat completion: TTFT, decode and prefill speed, the text."""
    prompt_tokens = len(llm.tokenize(_template(llm, messages).encode(), special=True))
    start = time.perf_counter()
    first, pieces = 0.0, []
    for chunk in llm.create_chat_completion(
        messages, max_tokens=max_tokens, stream=True, repeat_penalty=REPEAT_PENALTY,
        temperature=SAMPLING["temperature"], top_k=SAMPLING["top_k"],
        top_p=SAMPLING["top_p"], min_p=SAMPLING["min_p"],
    ):  # fmt: skip
        delta = chunk["choices"][0]["delta"].get("content")
        if delta:
            first = first or time.perf_counter()
            pieces.append(delta)
    end = time.perf_counter()
    # Streamed chunks are text pieces, not always single tokens: count tokens afterwards.
    completion = len(llm.tokenize("".join(pieces).encode(), add_bos=False))
    ttft = (first or end) - start
    decode_s = end - first if first else 0.0
    return {
        "text": "".join(pieces),
        "ttft": ttft,
        "prefill": prompt_tokens / ttft if ttft else 0.0,
        "decode": (completion - 1) / decode_s if completion > 1 and decode_s else 0.0,
        "completion": completion,
        "prompt": prompt_tokens,
    }


def _template(llm: Any, messages: list[dict[str, str]]) -> str:
    """The ChatML prompt SmolLM2 uses (only to count prompt tokens)."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n"


# ------------------------------------------------------------------ orchestration


def measure(contender: str, model: str) -> dict[str, Any] | None:
    """Run one contender in this process."""
    if contender == "llama.cpp":
        from engine.models import resolve_model

        spec = resolve_model(model)
        return measure_llama_cpp(str(spec.path)) if spec.kind == "gguf" else None
    backend = contender.removeprefix("engine-")
    return measure_engine(model, backend, "float32" if backend == "torch" else "auto")


def run_isolated(contender: str, model: str, timeout_s: float = 900) -> dict[str, Any] | None:
    """`measure` in a fresh subprocess, so peak RSS and thread pools are the contender's own."""
    cmd = [sys.executable, "-m", "bench.peers", contender, model]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=os.environ)
    if proc.returncode == 0 and proc.stdout.strip().endswith("null"):
        return None  # the contender is not available here (llama-cpp-python missing)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"name": contender, "error": tail}
    return json.loads(lines[-1]) or None


def compare(model: str, contenders: tuple[str, ...] = CONTENDERS) -> list[dict[str, Any]]:
    """Measure each contender (skipping unavailable ones) and add ratios to llama.cpp."""
    rows = []
    for name in contenders:
        row = run_isolated(name, model) or {"error": "not installed (make bench-peers)"}
        rows.append({"name": name, **row})
    base = next((r for r in rows if r["name"] == "llama.cpp" and "error" not in r), None)
    for row in rows:
        if base is not None and "error" not in row:
            row["ratio_to_llama_cpp"] = {
                m: (row[m] / base[m] if base.get(m) else None) for m in METRICS if m in row
            }
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table: one line per contender, ratios to llama.cpp in brackets."""
    titles = ("decode tok/s", "prefill tok/s", "TTFT s", "TTFT turn 8 s", "peak RSS MB")
    lines = [f"{'contender':<14}" + "".join(t.rjust(18) for t in titles)]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['name']:<14}  unavailable: {row['error']}")
            continue
        ratios = row.get("ratio_to_llama_cpp", {})
        cells = []
        for metric in METRICS:
            ratio = ratios.get(metric)
            tag = f" ({ratio:.2f}x)" if ratio is not None else ""
            cells.append(f"{row.get(metric, float('nan')):.3g}{tag}".rjust(18))
        lines.append(f"{row['name']:<14}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``python -m bench.peers [all|CONTENDER] [MODEL] [--json]``."""
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    contender = args[0] if args else "all"
    model = args[1] if len(args) > 1 else "bundled"
    if contender == "all":
        rows = compare(model)
        print(json.dumps(rows, indent=2) if as_json else format_table(rows))
        return 0
    result = measure(contender, model)
    if result is not None:
        result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
