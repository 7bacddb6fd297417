"""Will this model fit, and how fast will it run here: the verdict shown before a download.

Owns `Fit` (fits / tight / won't fit from the RAM a model needs against the RAM available, the
fast path, an expected decode speed), `assess` for a summarised file, `assess_size` for a file
known only by its size, `best_quant` (the best file of a repo that fits) and this machine's
decode speed per byte of weights: measured after real generations (`record_decode_speed`, a
small JSON in the cache folder) or, until one is recorded, estimated from a memory-bandwidth
probe and labelled as such.
Memory and speed differ for a mixture-of-experts model: RAM must hold the whole file, but each
token reads only its routed experts, so the speed follows the bytes read per token.
Does not own the memory model (`engine.models`) or reading headers (`engine.hub.summary`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.arch import ARCHS
from engine.cache_folders import cache_root
from engine.hub.search import HubFile, plain_per_quant, quant_of
from engine.hub.summary import ModelSummary

Verdict = Literal["fits", "tight", "wont_fit"]
COMFORT = 0.75  # "fits" leaves a quarter of the available RAM to everything else
# Decode reads every weight once per token; measured CPU decode reaches about this share of a
# streaming-read bandwidth (the rest: attention, sampling, kernel overheads).
PROBE_EFFICIENCY = 0.5
# A file's RAM need without its header (for `best_quant` and size-only verdicts): GGUF bytes
# x the RAM its quant takes on the fast path, plus KV cache and runtime overhead
# (engine.models.OVERHEAD_*). ONNX Runtime keeps each block as 4- or 8-bit codes with a float32
# scale and block sum (`engine.gguf.repack.resident_nbytes`): Q8_0 34 -> 40 bytes per 32
# weights, Q4_K 144 -> 228 per 256, 5- and 6-bit codes as 8 bits, codebook types (IQ*) as 8-bit
# codes. Mixes (K_M, K_S) weigh their usual 6-bit share in. Checked against resident_nbytes in
# tests/engine/test_hub_fit.py.
SIZE_FACTORS: dict[str, float] = {
    "F32": 1.0, "F16": 2.0, "BF16": 2.0, "Q8_0": 1.2,
    "Q6_K": 1.85, "Q5_0": 1.85, "Q5_1": 1.85, "Q5_K_M": 2.0, "Q5_K_S": 2.0,
    "Q4_0": 1.35, "Q4_1": 1.45, "Q4_K_M": 1.7, "Q4_K_S": 1.65, "Q4_K": 1.6,
    "Q3_K_L": 2.35, "Q3_K_M": 2.35, "Q3_K_S": 2.35, "Q2_K": 3.85,
    "IQ4_XS": 2.4, "IQ4_NL": 2.25, "MXFP4": 2.4,
    "IQ3_S": 2.1, "IQ3_M": 2.3, "IQ3_XXS": 3.3, "IQ3_XS": 3.3,
    "IQ2_XXS": 4.9, "IQ2_XS": 5.2, "IQ2_S": 4.7, "IQ2_M": 4.7,
}  # fmt: skip
SIZE_FACTOR = 1.8  # a quant tag not listed, or none
FIXED_OVERHEAD = 256 * 2**20
_FULL_PRECISION = ("F32", "F16", "BF16", "FP16")


@dataclass(frozen=True)
class Fit:
    verdict: Verdict
    ram_needed_bytes: int
    ram_available_bytes: int
    expected_tok_s: float | None
    fast_path: bool
    note: str  # one sentence: why this verdict and where the speed comes from


def available_ram() -> int:
    """RAM available now (psutil's "available": free + reclaimable cache)."""
    import psutil

    return int(psutil.virtual_memory().available)


def verdict_for(needed: int, available: int) -> Verdict:
    if needed <= COMFORT * available:
        return "fits"
    return "tight" if needed <= available else "wont_fit"


def assess(summary: ModelSummary, *, ram_available: int | None = None) -> Fit:
    """The verdict for one summarised model."""
    available = available_ram() if ram_available is None else ram_available
    verdict = verdict_for(summary.ram_estimate_bytes, available)
    # The torch path reads float32 weights: 4 bytes per parameter a token uses.
    per_token = summary.bytes_per_token if summary.fast_path else 4 * summary.parameters_per_token
    speed, speed_note = expected_tok_s(per_token)
    gib = 2**30
    note = {
        "fits": f"needs about {summary.ram_estimate_bytes / gib:.1f} GiB of "
        f"{available / gib:.1f} GiB available",
        "tight": f"needs about {summary.ram_estimate_bytes / gib:.1f} GiB, nearly all of the "
        f"{available / gib:.1f} GiB available: close other programs first",
        "wont_fit": f"needs about {summary.ram_estimate_bytes / gib:.1f} GiB but only "
        f"{available / gib:.1f} GiB is available: choose a smaller model or quant",
    }[verdict]
    path_note = (
        "" if summary.fast_path else f"; runs on the slower torch path ({summary.fast_path_reason})"
    )
    return Fit(
        verdict,
        summary.ram_estimate_bytes,
        available,
        speed,
        summary.fast_path,
        f"{note}{path_note}{_experts_note(summary)}; {speed_note}",
    )


def _experts_note(summary: ModelSummary) -> str:
    if not summary.expert_count or not summary.expert_used_count:
        return ""
    share = summary.bytes_per_token / max(summary.size_bytes, 1)
    return (
        f"; a mixture of experts: each token reads {summary.expert_used_count} of "
        f"{summary.expert_count} experts, about {share:.0%} of the weights"
    )


def assess_size(
    size_bytes: int,
    *,
    active_fraction: float = 1.0,
    ram_available: int | None = None,
    what: str = "",
    architecture: str = "",
) -> Fit:
    """A `Fit` for a GGUF known only by its size (no header read): RAM by the engine's size
    rule (`ram_for_size`), speed from the share of the weights a token reads
    (``active_fraction``: a mixture-of-experts model's active / total parameters). The fast
    path is assumed when its ``architecture`` is one it knows (or is not given); a header
    says for sure (`assess`)."""

    if not 0 < active_fraction <= 1:
        raise ValueError(f"active_fraction must be in (0, 1], got {active_fraction}")
    available = available_ram() if ram_available is None else ram_available
    needed = ram_for_size(size_bytes, quant_of(what) or what)
    speed, speed_note = expected_tok_s(int(size_bytes * active_fraction))
    moe = (
        f"; a token reads about {active_fraction:.0%} of the weights" if active_fraction < 1 else ""
    )
    fast = not architecture or architecture in ARCHS
    path = "" if fast else f"; the fast path does not run {architecture!r} models yet"
    note = f"judged from the file size{f' ({what})' if what else ''}{moe}{path}; {speed_note}"
    return Fit(verdict_for(needed, available), needed, available, speed, fast, note)


def ram_for_size(size_bytes: int, quant: str = "") -> int:
    """RAM to run a GGUF of ``size_bytes`` on the fast path, without its header, by its quant
    tag (``Q4_K_M``; `SIZE_FACTORS`; unknown or none: `SIZE_FACTOR`)."""
    tag = quant.upper()
    factor = SIZE_FACTORS.get(tag) or SIZE_FACTORS.get(tag.rsplit("_", 1)[0], SIZE_FACTOR)
    return int(size_bytes * factor) + FIXED_OVERHEAD


def best_quant(files: list[HubFile], ram_available: int | None = None) -> HubFile | None:
    """The largest single-file quant (8 bits or fewer; full precision only when a repo has
    nothing else) whose estimated RAM fits comfortably; None when none does. Of several files
    with one quant tag (``UD-Q4_K_M`` next to ``Q4_K_M``), only the plain one competes."""
    available = available_ram() if ram_available is None else ram_available
    single = plain_per_quant([f for f in files if f.split_parts == 1])
    quantised = [f for f in single if f.quant not in _FULL_PRECISION]
    candidates = quantised or single
    fitting = [
        f
        for f in candidates
        if verdict_for(ram_for_size(f.size_bytes, f.quant), available) == "fits"
    ]
    return max(fitting, key=lambda f: f.size_bytes, default=None)


# ------------------------------------------------------------ decode speed per byte of weights


def expected_tok_s(weight_bytes: int) -> tuple[float | None, str]:
    """(tokens/s, where the figure comes from) for a model reading ``weight_bytes`` per token."""
    if weight_bytes <= 0:
        return None, "no speed estimate"
    record = _read_speed()
    measured = record.get("measured_bytes_per_s")
    if isinstance(measured, int | float) and measured > 0:
        return measured / weight_bytes, "speed measured on this machine"
    probe = record.get("probe_bytes_per_s")
    if not isinstance(probe, int | float) or probe <= 0:
        probe = probe_bandwidth() * PROBE_EFFICIENCY
        _write_speed({**record, "probe_bytes_per_s": probe})
    return probe / weight_bytes, "speed estimated from a memory-bandwidth probe"


def record_probe(bytes_per_s: float) -> None:
    """Store a bandwidth-probe figure (already scaled by `PROBE_EFFICIENCY`) in place of
    probing: the README's screenshot draws its speeds for a nominal laptop this way."""
    if bytes_per_s > 0:
        _write_speed({**_read_speed(), "probe_bytes_per_s": bytes_per_s})


def record_decode_speed(weight_bytes: int, tok_per_s: float) -> None:
    """Record a real generation's decode speed (the engine calls this after generating);
    kept as a running average of bytes of weights read per second."""
    if weight_bytes <= 0 or tok_per_s <= 0:
        return
    record = _read_speed()
    sample = weight_bytes * tok_per_s
    n = int(record.get("samples", 0) or 0)
    old = float(record.get("measured_bytes_per_s", 0.0) or 0.0)
    mean = (old * n + sample) / (n + 1) if n else sample
    _write_speed({**record, "measured_bytes_per_s": mean, "samples": min(n + 1, 20)})


def probe_bandwidth(nbytes: int = 64 * 2**20, repeats: int = 3) -> float:
    """Bytes per second of a streaming read over ``nbytes`` (best of ``repeats``)."""
    import numpy as np

    data = np.ones(nbytes // 8, dtype=np.float64)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - start)
    return nbytes / max(best, 1e-9)


def _speed_file() -> Path:

    return cache_root() / "hub" / "speed.json"


def _read_speed() -> dict[str, float]:
    try:
        data = json.loads(_speed_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_speed(record: dict[str, float]) -> None:
    target = _speed_file()
    with contextlib.suppress(OSError):  # losing a speed record only costs an estimate
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(tmp, target)
