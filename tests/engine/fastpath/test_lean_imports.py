"""The fast path never imports torch nor transformers: opening and running a GGUF on ONNX
Runtime costs neither torch's ~1 s import and ~250 MB of memory nor transformers' ~1.5 s.

One fresh interpreter (a test process has torch loaded already) opens the bundled model on the
fast path and runs what a user and the local server run there: a seeded sampled reply with
every filter on, a greedy reply with the penalties, structured output (the grammar's token
mask), and concurrent requests through the server's batched decode steps. Then it reports
which heavy modules got imported. Seeded sampling must also give the same ids in two separate
processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import http.client, json, sys, threading
from engine.engine import Engine
from engine.serve.server import serve_in_thread
from engine.types import GenerationRequest, Message, ResponseFormat, SamplingParams

engine = Engine("bundled")
ask = (Message("user", "Name three colours."),)
def ids(params, **kw):
    return list(list(engine.generate(GenerationRequest(ask, params, **kw)))[-1].token_ids)
out = {"backend": engine.info.backend}
out["sampled"] = ids(SamplingParams(seed=11, max_new_tokens=6, repetition_penalty=1.2,
                                    frequency_penalty=0.3, presence_penalty=0.1))
out["greedy"] = ids(SamplingParams(temperature=0.0, max_new_tokens=6, repetition_penalty=1.3))
out["json"] = ids(SamplingParams(seed=1, max_new_tokens=6),
                  response_format=ResponseFormat("json_object"))

def call(port, body, results):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/chat/completions", json.dumps(body).encode(),
                 {"Content-Type": "application/json"})
    results.append(json.loads(conn.getresponse().read())["choices"][0]["message"]["content"])

with serve_in_thread(engine) as server:
    results = []
    bodies = [{"messages": [{"role": "user", "content": f"Count to {n}"}], "max_tokens": 5,
               "temperature": t, "top_p": 0.9, "seed": 3} for n, t in ((3, 0.0), (5, 0.8))]
    threads = [threading.Thread(target=call, args=(server.port, b, results)) for b in bodies]
    for t in threads: t.start()
    for t in threads: t.join()
out["served"] = len(results)
engine.close()
out["heavy"] = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print(json.dumps(out))
"""


def _run() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return [_run(), _run()]


def test_the_fast_path_runs_without_torch(runs: list[dict[str, Any]]) -> None:
    first = runs[0]
    assert first["backend"] == "onnx"
    assert first["served"] == 2
    assert all(len(first[k]) > 0 for k in ("sampled", "greedy", "json"))
    assert first["heavy"] == [], first["heavy"]  # neither torch nor transformers


def test_seeded_sampling_is_the_same_in_another_process(runs: list[dict[str, Any]]) -> None:
    assert runs[0]["sampled"] == runs[1]["sampled"]
    assert runs[0]["greedy"] == runs[1]["greedy"]
    assert runs[0]["json"] == runs[1]["json"]
