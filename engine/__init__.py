"""Hearth's inference engine: a synchronous, Qt-free library over a local or remote model.

Public API: `Engine` (local model on one thread), `RemoteEngine` (OpenAI-compatible endpoint),
and the boundary types in `engine.types` / `engine.errors`. Heavy modules (torch, transformers)
load lazily on first use of `Engine`, so `import engine.types` stays cheap for the GUI.
"""

from __future__ import annotations

import os

from engine import settings

# Before anything can import torch (every engine module, and the app, imports through this
# package): OpenMP's idle worker threads (torch's, on the exact path; Hearth's C kernel has its
# own pool, `engine/kernels/pool.h`) then sleep instead of spinning. On a busy 2-core
# machine spinning threads starve each other (decode 1.2 -> 4.3 tok/s with PASSIVE, measured
# under load); on an idle one the wake-up costs little next to a forward pass. setdefault: a
# user's own setting wins. `HEARTH_OMP_PASSIVE=0` opts out: the bench runs llama.cpp (OpenMP too)
# in a child process with its default policy, since PASSIVE costs it ~3x decode speed there.
if "OMP_WAIT_POLICY" not in os.environ and not settings.OMP_PASSIVE.is_off():
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ[settings.OMP_PASSIVE.name] = "set"  # tells child processes the policy was ours

from typing import TYPE_CHECKING, Any

from engine.errors import EngineError
from engine.types import (
    Finished,
    FinishReason,
    GenerationRequest,
    LiveParams,
    Message,
    SamplingParams,
    TextDelta,
)

if TYPE_CHECKING:
    from engine.engine import Engine
    from engine.remote.backend import RemoteEngine

__all__ = [
    "Engine",
    "EngineError",
    "FinishReason",
    "Finished",
    "GenerationRequest",
    "LiveParams",
    "Message",
    "RemoteEngine",
    "SamplingParams",
    "TextDelta",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing torch costs seconds; only pay it when a local engine is wanted.
    if name == "Engine":
        from engine.engine import Engine

        return Engine
    if name == "RemoteEngine":
        from engine.remote.backend import RemoteEngine

        return RemoteEngine
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
