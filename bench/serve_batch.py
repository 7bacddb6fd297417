"""`python -m bench serve-batch`: the local server's throughput with concurrent streaming clients.

Aggregate tokens/s and TTFT p50/p95 with 1 / 4 / 8 clients streaming at once (the same prompts,
greedy, ``--max-tokens`` each), for Hearth's server (`python -m engine serve`, a subprocess)
next to llama.cpp on the same GGUF:

- ``llama.cpp server``: llama-cpp-python's OpenAI server (`python -m llama_cpp.server`), the same
  HTTP client. It runs one request at a time (it has no ``--parallel`` slots); requests queue
  (``--interrupt_requests false``: by default a new request cuts the running one short).
- ``llama.cpp batched``: llama.cpp's own multi-sequence batching (what ``llama-server
  --parallel 8`` does), driven through llama-cpp-python's low-level API in a subprocess: all
  prompts prefilled in one batch, then one ``llama_decode`` per step for every sequence. No HTTP,
  so it is an upper bound for a llama.cpp server; its TTFT is the batched prefill's.

Each server row carries the server process's peak RSS during the load (psutil, sampled every
50 ms; "-" for the in-process llama.cpp batched row). The ``fairness`` row (Hearth, skipped with
``--no-fairness``): one greedy client sends 8 long prompts at once (``--fair-prompt-words``
words each) and, once they are running, another client (another API key) sends one short
request; the row gives that short request's TTFT and total time, next to the greedy client's.

llama.cpp runs with the default OpenMP wait policy and with ``OMP_WAIT_POLICY=passive``; the
better figure is kept (its threads spin, which costs on a busy machine). Prompts carry a
per-run tag at the start so no server reuses a cached prefix from the previous run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PROMPTS = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a bicycle stays upright, in simple words.",
    "List five things to pack for a weekend hiking trip and say why.",
    "What is the difference between weather and climate?",
    "Describe a busy market in the morning.",
    "Give three tips for learning a new language.",
    "Why do cats purr? Answer in a paragraph.",
    "Write a friendly email inviting a colleague to lunch.",
]
CLIENTS = (1, 4, 8)
MAX_TOKENS = 64
READY_S = 600  # a first run converts the model for the fast path
REPEAT = 2  # runs per row, the best kept: other work on a shared machine only slows a run down
FAIR_WORDS = 600  # words in each of the greedy client's 8 prompts (fairness row)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("serve-batch", help="Server throughput with 1/4/8 streaming clients")
    p.add_argument("--model", default="bundled", help="'bundled' or a .gguf file")
    p.add_argument("--clients", default=",".join(map(str, CLIENTS)), help="e.g. 1,4,8")
    p.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    p.add_argument("--repeat", type=int, default=REPEAT, help="runs per row; the best is kept")
    p.add_argument("--no-peer", action="store_true", help="Hearth only")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--no-fairness", action="store_true", help="no greedy + short client row")
    p.add_argument("--fair-prompt-words", type=int, default=FAIR_WORDS)


def run(args: argparse.Namespace) -> int:
    from engine.models import resolve_model

    spec = resolve_model(args.model)
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    load_spec = (clients, args.max_tokens, max(1, args.repeat))
    fair = 0 if args.no_fairness else args.fair_prompt_words
    rows = [{"server": "hearth", **r} for r in hearth_rows(args.model, *load_spec, fair)]
    if not args.no_peer and spec.kind == "gguf":
        rows += peer_rows(Path(spec.path), *load_spec)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(format_table(rows))
    return 0


# ------------------------------------------------------------------ the load


def load(port: int, clients: int, max_tokens: int, tag: str) -> dict[str, Any]:
    """``clients`` streaming chat completions at once; aggregate tok/s and TTFT percentiles."""
    results: list[tuple[float, int]] = [(0.0, 0)] * clients
    barrier = threading.Barrier(clients + 1)

    def one(i: int) -> None:
        barrier.wait()
        prompt = f"[{tag}-{i}] {PROMPTS[i % len(PROMPTS)]}"
        results[i] = stream_once(port, prompt, max_tokens)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return _summary(clients, [r[0] for r in results], sum(r[1] for r in results), wall)


def _summary(clients: int, ttfts: list[float], tokens: int, wall: float) -> dict[str, Any]:
    ordered = sorted(ttfts)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "clients": clients,
        "tokens": tokens,
        "wall_s": round(wall, 3),
        "tok_s": round(tokens / wall, 1) if wall else 0.0,
        "ttft_p50_s": round(statistics.median(ordered), 3),
        "ttft_p95_s": round(p95, 3),
    }


def stream_once(port: int, prompt: str, max_tokens: int, key: str = "") -> tuple[float, int]:
    """(TTFT, completion tokens) of one streamed, greedy chat completion (``key``: the client's
    API key, which a server without one ignores and Hearth's batch takes turns by)."""
    body = {
        "model": "",
        "messages": [{"role": "user", "content": prompt}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": max_tokens,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=READY_S)
    start, first, chunks, usage = time.perf_counter(), 0.0, 0, None
    try:
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        reply = conn.getresponse()
        if reply.status != 200:
            raise RuntimeError(f"server answered {reply.status}: {reply.read()[:200]!r}")
        for line in reply:
            if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            usage = chunk.get("usage") or usage
            choices = chunk.get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                first = first or time.perf_counter()
                chunks += 1
    finally:
        conn.close()
    tokens = int(usage["completion_tokens"]) if usage else chunks  # llama-cpp-python: no usage
    return (first or time.perf_counter()) - start, tokens


# ------------------------------------------------------------------ the servers


def hearth_rows(
    model: str, clients: list[int], max_tokens: int, repeat: int, fair_words: int = 0
) -> list[dict[str, Any]]:
    port = _free_port()
    cmd = [sys.executable, "-m", "engine", "serve", "--model", model, "--port", str(port)]
    with _server([*cmd, "--quiet"], port, dict(os.environ)) as proc:
        rows = _rounds(port, clients, max_tokens, "h", repeat, proc.pid)
        if fair_words:
            with _PeakRss(proc.pid) as rss:
                fair = fairness(port, fair_words, max_tokens)
            rows.append({**fair, "peak_rss_mb": rss.peak_mb})
        return rows


def fairness(port: int, words: int, max_tokens: int) -> dict[str, Any]:
    """One greedy client's 8 long prompts, then another client's short request once the
    greedy ones have started: the short one's TTFT and total against the greedy client's."""
    greedy: list[tuple[float, int]] = [(0.0, 0)] * 8
    long = " ".join(["word"] * words)
    start = time.perf_counter()

    def one(i: int) -> None:
        greedy[i] = stream_once(port, f"[g{i}] {long} Summarise.", max_tokens, "greedy")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the greedy prompts are in
    short_start = time.perf_counter()
    ttft, tokens = stream_once(port, "Say hello.", 8, "polite")
    short_total = time.perf_counter() - short_start
    for t in threads:
        t.join()
    return {
        "clients": "8+1",
        "tokens": sum(g[1] for g in greedy) + tokens,
        "wall_s": round(time.perf_counter() - start, 3),
        "tok_s": 0.0,
        "ttft_p50_s": round(ttft, 3),  # the short request's
        "ttft_p95_s": round(short_total, 3),  # the short request's whole reply
        "greedy_ttft_max_s": round(max(g[0] for g in greedy), 3),
        "fairness": True,
    }


class _PeakRss:
    """The peak resident set of process ``pid`` while in the block (psutil, every 50 ms)."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc = psutil.Process(pid) if pid else None  # none: no figure
        self.peak, self._stop = 0, threading.Event()

    def __enter__(self) -> _PeakRss:
        self.peak = self._rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def peak_mb(self) -> float:
        return round(self.peak / 2**20, 1)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self._rss())

    def _rss(self) -> int:
        if self.proc is None:
            return 0
        try:
            return int(self.proc.memory_info().rss)
        except Exception:  # the process ended: the peak so far stands
            return 0


def peer_rows(gguf: Path, clients: list[int], max_tokens: int, repeat: int) -> list[dict[str, Any]]:
    """llama.cpp's server and its batched decoding, each with the better OpenMP policy."""
    rows: list[dict[str, Any]] = []
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError:
        print("llama-cpp-python[server] is missing: no llama.cpp server row", file=sys.stderr)
    else:
        best = _better(
            [_llama_server_rows(gguf, clients, max_tokens, repeat, p) for p in ("", "passive")]
        )
        rows += [{"server": "llama.cpp server (serial)", **r} for r in best]
    batched = [_llama_batched_rows(gguf, clients, max_tokens, repeat, p) for p in ("", "passive")]
    rows += [{"server": "llama.cpp batched (no HTTP)", **r} for r in _better(batched)]
    return rows


def _llama_server_rows(
    gguf: Path, clients: list[int], max_tokens: int, repeat: int, policy: str
) -> list[dict[str, Any]]:
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--port", str(port),
           "--n_ctx", "4096", "--n_threads", str(_cores()), "--verbose", "false",
           "--interrupt_requests", "false"]  # fmt: skip
    with _server(cmd, port, _omp_env(policy)) as proc:
        return [
            {**r, "omp": policy or "default"}
            for r in _rounds(port, clients, max_tokens, "l", repeat, proc.pid)
        ]


def _llama_batched_rows(
    gguf: Path, clients: list[int], max_tokens: int, repeat: int, policy: str
) -> list[dict[str, Any]]:
    job = json.dumps(
        {"gguf": str(gguf), "clients": clients, "max_tokens": max_tokens, "repeat": repeat}
    )
    out = subprocess.run(
        [sys.executable, "-m", "bench.serve_batch_llama", job],
        env=_omp_env(policy), capture_output=True, text=True, timeout=1800, check=True,
    )  # fmt: skip
    return [{**r, "omp": policy or "default"} for r in json.loads(out.stdout.splitlines()[-1])]


def _better(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per client count, the run with the higher throughput."""
    return [max(same, key=lambda r: r["tok_s"]) for same in zip(*runs, strict=True)]


def _rounds(
    port: int, clients: list[int], max_tokens: int, tag: str, repeat: int, pid: int = 0
) -> list[dict[str, Any]]:
    """Per client count, the best of ``repeat`` loads, with the server's peak RSS over them."""
    stream_once(port, "Hello", 4)  # warm-up, not measured
    rows = []
    for n in clients:
        with _PeakRss(pid) as rss:
            runs = [load(port, n, max_tokens, f"{tag}{n}r{k}") for k in range(repeat)]
        rows.append({**max(runs, key=lambda r: r["tok_s"]), "peak_rss_mb": rss.peak_mb})
    return rows


class _server:
    """A server subprocess, ready once it answers /v1/models; stopped on exit."""

    def __init__(self, cmd: list[str], port: int, env: dict[str, str]) -> None:
        self.cmd, self.port, self.env = cmd, port, env

    def __enter__(self) -> subprocess.Popen[bytes]:
        quiet = subprocess.DEVNULL
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=quiet, stderr=quiet)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{' '.join(self.cmd[:4])} exited with {self.proc.returncode}")
            if _answers(self.port):
                return self.proc
            time.sleep(0.5)
        self.proc.kill()
        raise RuntimeError(f"{' '.join(self.cmd[:4])} did not start in {READY_S} s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/v1/models")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def _omp_env(policy: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["HEARTH_OMP_PASSIVE"] = "0"  # the peer's own default unless asked
    if policy:
        env["OMP_WAIT_POLICY"] = policy.upper()
    return env


def _cores() -> int:
    import psutil

    return max(1, psutil.cpu_count(logical=False) or 1)


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


def format_table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'server':<28} {'clients':>7} {'tok/s':>8} {'TTFT p50':>9} {'TTFT p95':>9}"
        f" {'peak RSS':>9}  omp"
    )
    lines = [head, "-" * len(head)]
    single = {r["server"]: r["tok_s"] for r in rows if r["clients"] == 1}
    for r in rows:
        rss = f"{r['peak_rss_mb']:>6.0f} MB" if r.get("peak_rss_mb") else f"{'-':>9}"
        if r.get("fairness"):
            lines.append(
                f"{'hearth fairness':<28} {r['clients']:>7} {'-':>8} {r['ttft_p50_s']:>8.2f}s"
                f" {r['ttft_p95_s']:>8.2f}s {rss}  (short client's TTFT and total; the greedy"
                f" client's slowest TTFT {r['greedy_ttft_max_s']:.2f}s)"
            )
            continue
        ratio = r["tok_s"] / single[r["server"]] if single.get(r["server"]) else 0.0
        lines.append(
            f"{r['server']:<28} {r['clients']:>7} {r['tok_s']:>8.1f} {r['ttft_p50_s']:>8.2f}s"
            f" {r['ttft_p95_s']:>8.2f}s {rss}  {r.get('omp', '-')}  ({ratio:.1f}x one client)"
        )
    return "\n".join(lines)
