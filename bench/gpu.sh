#!/usr/bin/env bash
# The whole GPU check in one go, for a session that is lent a CUDA device (budget: one run of
# well under 10 minutes). Installs nothing: it needs a Python with a CUDA build of torch and
# the project's dependencies (PY=..., default .venv/bin/python) and the bundled model.
#   1. the engine on CUDA through `Engine(backend="auto")`: it must pick the static-cache
#      runner (bf16, CUDA-graph decode), answer sanely and report its decode speed;
#   2. that runner side by side with transformers generate() on the same bf16 weights;
#   3. the tests marked gpu (the compiled decode step equals the eager one);
#   4. a real-size random Qwen2.5-0.5B-shaped Q4_K_M file through the same path.
# Each step prints JSON or pytest's summary; a failing step does not stop the next.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible to torch')" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

echo "== 1. Engine(auto) on CUDA"
timeout 240 "$PY" - <<'EOF' || echo '{"engine_cuda": "failed"}'
import json, time
from engine.engine import Engine
from engine.types import GenerationRequest, Message, SamplingParams
t = time.perf_counter()
engine = Engine("bundled")
load_s = time.perf_counter() - t
params = SamplingParams(temperature=0.0, max_new_tokens=128)
request = GenerationRequest((Message("user", "What is the capital of France?"),), params)
done = list(engine.generate(request))[-1]
print(json.dumps({
    "backend": engine.info.backend, "device": engine.info.device, "dtype": engine.info.dtype,
    "load_s": round(load_s, 1), "decode_tokens_per_s": round(done.stats.decode_tokens_per_s, 1),
    "ttft_s": round(done.stats.ttft_s, 3), "answer": done.text[:80],
}))
EOF

echo "== 2. static-cache runner vs transformers generate()"
timeout 240 "$PY" -m bench.cuda --device cuda --tokens 256 || echo '{"cuda_runner": "failed"}'

echo "== 3. tests marked gpu"
timeout 180 "$PY" -m pytest -q -m gpu tests/engine || true

echo "== 4. a real-size random Qwen2.5-0.5B-shaped Q4_K_M file on CUDA"
timeout 240 "$PY" - <<'EOF' || echo '{"real_size_cuda": "failed"}'
import json, tempfile, time
from pathlib import Path
from bench.synth.core import write_real_size_model
from engine.runners.cuda_runner import StaticCacheRunner
from engine.loader import load_model
path = Path(tempfile.mkdtemp()) / "qwen2-0.5b-Q4_K_M.gguf"
write_real_size_model(path, "qwen2", "Q4_K_M")
t = time.perf_counter()
loaded = load_model(str(path), device="cuda:0", context_window=2048)
runner = StaticCacheRunner(loaded.model, context_window=2048)
open_s = time.perf_counter() - t
import torch
logits = runner.extend(list(range(10, 138)), last_only=True)[0]
runner.extend([int(logits.argmax())], last_only=True)  # compile + capture
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(128):
    logits = runner.extend([int(logits.argmax())], last_only=True)[0]
torch.cuda.synchronize()
print(json.dumps({"open_s": round(open_s, 1), "decode_tokens_per_s": round(128 / (time.perf_counter() - t), 1)}))
EOF
