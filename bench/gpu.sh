#!/usr/bin/env bash
# GPU side-by-side (issue 4): the engine's static-cache + CUDA-graph decode step vs transformers
# generate(), same bf16 weights and prompt, greedy, 256 new tokens. Installs nothing: it needs
# the project's .venv with a CUDA build of torch and the bundled model. Budget: < 6 minutes
# (GGUF conversion on a fresh cache ~1 min, torch.compile + graph capture ~1-2 min).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible to torch')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
timeout 300 "$PY" -m engine.runners.cuda_runner --device cuda --tokens 256
# The engine's own bench, when it knows --device (engine/cli/bench.py).
if "$PY" -m engine bench --help 2>/dev/null | grep -q -- "--device"; then
    timeout 60 "$PY" -m engine bench --model bundled --device cuda --json || echo '{"bench": "timed out or failed"}'
fi
