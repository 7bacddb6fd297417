"""Child process for tests/engine/test_cpus.py: under the affinity mask given on the command
line (set before the engine is imported), print the engine's chosen thread counts and the
greedy tokens of a real decode of the bundled model with every matrix on the kernel."""

from __future__ import annotations

import hashlib
import json
import os
import sys

os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")})
os.environ["HEARTH_KERNEL_MIN_BYTES"] = "0"  # the bundled file's matrices on the kernel

import numpy as np  # noqa: E402

from engine.cpus import usable_cores  # noqa: E402
from engine.fastpath.builder import ACCURACY_INT8  # noqa: E402
from engine.kernels import native  # noqa: E402
from engine.models import bundled_gguf_path  # noqa: E402
from engine.runners.fast_open import fast_runner_or_reason  # noqa: E402
from engine.runners.session_options import physical_cores  # noqa: E402

threads = int(sys.argv[2]) if len(sys.argv) > 2 else None
runner, reason = fast_runner_or_reason(bundled_gguf_path(), None, threads, ACCURACY_INT8, 64)
assert runner is not None, reason
governor = getattr(runner, "_governor", None)
tokens, logits = [], runner.extend([1, 504, 3458, 282, 4649, 314])
for _ in range(12):
    tokens.append(int(np.argmax(logits[-1])))
    logits = runner.extend([tokens[-1]])
print(
    json.dumps(
        {
            "usable": usable_cores(),
            "physical": physical_cores(),
            "kernel": native.kernel_threads(threads),
            "ops": runner.kernel_ops,
            "governor": None if governor is None else governor.cores,
            "tokens": tokens,
            "last": hashlib.sha256(logits[-1].tobytes()).hexdigest(),
        }
    )
)
