"""Every ``HEARTH_*`` environment knob the engine reads, declared once, and reading them.

Owns the declarations — name, kind, default, one line of meaning — in `SETTINGS`, and the only
reads of them: each knob is a `Setting` constant (``settings.EXPERT_KERNEL.is_off()``), read
when asked, never cached, so a test or a parent process may change the environment between
calls. docs/configuration.md is generated from these declarations (`markdown_table`, through
``make configuration-doc``) and a test keeps it in step. The boundary layer: imports
nothing else of the engine. Does not own the app's own knobs (`app.system.settings`) or the
variables of other programs (``OMP_NUM_THREADS``, ``HF_ENDPOINT``, proxies).

Kinds: ``switch`` ("0" turns a feature off; "1", where said, forces it on), ``count`` (a whole
number; anything else means the default), ``path`` (a folder), ``text``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["switch", "count", "path", "text"]


@dataclass(frozen=True)
class Setting:
    """One ``HEARTH_*`` variable: its name, kind, default (as the docs say it) and meaning."""

    name: str
    kind: Kind
    default: str
    meaning: str

    def __post_init__(self) -> None:
        if not self.name.startswith("HEARTH_"):
            raise ValueError(f"a Hearth setting's name starts with HEARTH_, got {self.name!r}")

    def raw(self) -> str | None:
        """The variable's value as set, or None when unset."""
        return os.environ.get(self.name)

    def text(self) -> str:
        """The value, stripped; "" when unset."""
        return (self.raw() or "").strip()

    def is_off(self) -> bool:
        """A switch set to "0"."""
        return self.raw() == "0"

    def forced(self) -> bool | None:
        """A switch's "1" (True) or "0" (False); None: unset or anything else (automatic)."""
        value = self.raw()
        return {"1": True, "0": False}.get(value) if value is not None else None

    def count(self) -> int | None:
        """A count: the whole number set, or None (unset or not all digits)."""
        value = self.text()
        return int(value) if value.isdigit() else None

    def path(self) -> Path | None:
        """A folder: the path set (``~`` expanded), or None when unset or empty."""
        value = self.text()
        return Path(value).expanduser() if value else None


def _declare(name: str, kind: Kind, default: str, meaning: str) -> Setting:
    return Setting(name, kind, default, meaning)


# --- folders -------------------------------------------------------------------------------
DATA_DIR = _declare(
    "HEARTH_DATA_DIR", "path", "the platform's user data folder",
    "where Hearth keeps conversations, logs and (unless HEARTH_MODELS_DIR) models",
)  # fmt: skip
MODELS_DIR = _declare(
    "HEARTH_MODELS_DIR", "path", "<data folder>/models", "where downloaded models are kept"
)
CACHE_DIR = _declare(
    "HEARTH_CACHE_DIR", "path", "the platform's cache folder (~/.cache/hearth)",
    "converted graphs, header caches and built kernels",
)  # fmt: skip
CHAT_CACHE_DIR = _declare(
    "HEARTH_CHAT_CACHE_DIR", "path", "<cache folder>/conversations",
    "conversations' KV caches saved on disk",
)  # fmt: skip
# --- the fast path's kernels -------------------------------------------------------------
EXPERT_KERNEL = _declare(
    "HEARTH_EXPERT_KERNEL", "switch", "on",
    "0: never build or use the C kernel (experts, dense MLPs, matrices run on ONNX Runtime)",
)  # fmt: skip
EXPERT_POPULATE = _declare(
    "HEARTH_EXPERT_POPULATE", "switch", "on",
    "0: do not pre-fault the mapped expert weights on Linux (MAP_POPULATE)",
)  # fmt: skip
DENSE_KERNEL = _declare(
    "HEARTH_DENSE_KERNEL", "switch", "automatic (files of HEARTH_DENSE_KERNEL_MIN_BYTES and up)",
    "0: dense MLPs stay on MatMulNBits; 1: on the one-expert kernel op at any size",
)  # fmt: skip
DENSE_KERNEL_MIN_BYTES = _declare(
    "HEARTH_DENSE_KERNEL_MIN_BYTES", "count", "2147483648 (2 GiB)",
    "the smallest file whose dense MLPs run on the kernel op",
)  # fmt: skip
MATRIX_KERNEL = _declare(
    "HEARTH_MATRIX_KERNEL", "switch", "on",
    "0: attention projections, the head (and every matrix) stay on MatMulNBits",
)  # fmt: skip
KERNEL_MIN_BYTES = _declare(
    "HEARTH_KERNEL_MIN_BYTES", "count", "64 MB or twice the last-level cache, the larger",
    "the smallest file whose every matrix runs on HearthMatMul",
)  # fmt: skip
RESIDENT_WEIGHTS = _declare(
    "HEARTH_RESIDENT_WEIGHTS", "switch", "on (where they fit in half the available memory)",
    "0: HearthMatMul's matrices stay mapped from the file, not read into huge pages",
)  # fmt: skip
NATIVE_OPS = _declare(
    "HEARTH_NATIVE_OPS", "switch", "on",
    "0: the kernel ops run through Python callbacks instead of ONNX Runtime custom ops",
)  # fmt: skip
DELTA_OP = _declare(
    "HEARTH_DELTA_OP", "switch", "on",
    "0: a DeltaNet layer's decode step and prefill stay ONNX nodes, not HearthDeltaNet/Run",
)  # fmt: skip
ATTENTION_OP = _declare(
    "HEARTH_ATTENTION_OP", "switch", "on",
    "0: text layers attend with ONNX Runtime's GroupQueryAttention, not HearthAttention",
)  # fmt: skip
KV_HALF = _declare(
    "HEARTH_KV_HALF", "switch", "on",
    "0: the K/V cache stays float32 where HearthAttention runs (float16 halves its bytes)",
)  # fmt: skip
THREAD_GOVERNOR = _declare(
    "HEARTH_THREAD_GOVERNOR", "switch", "on",
    "0: the kernel's threads are not capped when the machine is busy",
)  # fmt: skip
# --- threads, memory -----------------------------------------------------------------------
NUM_THREADS = _declare(
    "HEARTH_NUM_THREADS", "count", "one per physical core",
    "torch's threads (the float32 torch path)",
)  # fmt: skip
REPACK_THREADS = _declare(
    "HEARTH_REPACK_THREADS", "count", "one per core, at most 4",
    "threads repacking weights while a graph is converted",
)  # fmt: skip
ORT_SPIN = _declare(
    "HEARTH_ORT_SPIN", "switch", "automatic (spin only on an idle machine, never beside kernels)",
    "1/0: ONNX Runtime's worker threads spin between ops, or sleep",
)  # fmt: skip
OMP_PASSIVE = _declare(
    "HEARTH_OMP_PASSIVE", "switch", "on",
    "0: leave OMP_WAIT_POLICY alone (else PASSIVE: idle OpenMP threads sleep, not spin)",
)  # fmt: skip
RELEASE_PAGES = _declare(
    "HEARTH_RELEASE_PAGES", "switch", "on",
    "0: keep the weights' mapped pages once ONNX Runtime has prepacked them (Linux)",
)  # fmt: skip
# --- the server, the hub -----------------------------------------------------------------
API_KEY = _declare(
    "HEARTH_API_KEY", "text", "none",
    "the key `python -m engine serve` requires (needed to bind beyond 127.0.0.1)",
)  # fmt: skip
BATCH_SLOTS = _declare(
    "HEARTH_BATCH_SLOTS", "count", "8", "requests the server decodes together; more wait in line"
)
TOKEN_MIRRORS = _declare(
    "HEARTH_TOKEN_MIRRORS", "text", "none",
    "comma-separated hub mirrors trusted with the Hugging Face token",
)  # fmt: skip

SETTINGS: tuple[Setting, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, Setting)
)


def markdown_table(declared: tuple[Setting, ...] = SETTINGS) -> str:
    """``declared`` as the Markdown table docs/configuration.md holds."""
    rows = ["| Variable | Kind | Default | Meaning |", "|---|---|---|---|"]
    for s in declared:
        rows.append(f"| `{s.name}` | {s.kind} | {s.default} | {s.meaning} |")
    return "\n".join(rows) + "\n"
