"""YaRN rotary frequencies (gpt-oss; other files that declare ``rope.scaling.type = yarn``).

Owns `yarn_frequencies`: the per-pair inverse frequencies and the cos/sin multiplier of YaRN
("YaRN: Efficient Context Window Extension", Peng et al.), as transformers computes them
(`_compute_yarn_parameters`) and ggml's rope_yarn applies them: pairs that turn fewer than
``beta_slow`` times over the original context are interpolated (divided by the factor), pairs
that turn more than ``beta_fast`` times are kept, with a linear ramp between; cos and sin are
scaled by ``0.1·ln(factor) + 1``. gpt-oss keeps the correction range unrounded
(transformers' ``truncate: false``); other models round it outward. Does not own reading the
keys (`engine.arch.hparams`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def yarn_frequencies(hp: Any, base: float, dim: int) -> tuple[np.ndarray, float]:
    """(inverse frequencies (dim/2,) float64, cos/sin multiplier) for ``hp``'s YaRN keys."""
    factor, original = hp.yarn_factor, hp.rope_orig_context

    def correction_dim(rotations: float) -> float:
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(hp.yarn_beta_fast), correction_dim(hp.yarn_beta_slow)
    if hp.yarn_truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # no zero-width ramp
    half = dim // 2
    extrapolation = 1.0 / base ** (np.arange(half, dtype=np.float64) * 2 / dim)  # (half,)
    ramp = np.clip((np.arange(half, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    keep = 1.0 - ramp  # 1: the pair keeps its frequency, 0: interpolated by the factor
    inv = extrapolation / factor * (1.0 - keep) + extrapolation * keep
    mscale = hp.rope_attn_factor if hp.rope_attn_factor != 1.0 else 0.1 * math.log(factor) + 1.0
    return inv, mscale
