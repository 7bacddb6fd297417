"""Why a reply is slow: measured facts in, an ordered list of (cause, action) in plain words out.

Owns `SlowFacts` (what was measured: the model's path, the context, memory and swap, the
thread governor's count, the disk, the last reply's speed against the machine's estimate),
`diagnose` (the causes those figures show, most likely first, each with what to do) and
`looks_slow` (whether the status bar offers "Why is this slow?"). Pure and Qt-free: tests
hand it made-up facts. Does not own measuring (`app.chat.slowness_watch` gathers the facts,
the governor's through `app.bridge`) nor showing (`app.views.chat.why_slow`).

The words are marked for lupdate under the context "WhySlow" with a local
``QT_TRANSLATE_NOOP`` (this module imports no Qt); the view passes Qt's ``translate`` in so
each template is translated before its figures go in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GIB = 2**30
MIB = 2**20
LOW_DISK = GIB  # less free than this on the data folder's disk is "full"
LOW_RAM = 512 * MIB  # less available than this while a model is loaded is "pressure"
SWAP_SEEN = 16 * MIB  # swapped in + out between two looks: below this is noise
SLOW_FRACTION = 0.5  # a reply under half the machine's expected speed is "slow"

Translate = Callable[[str, str], str]


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Mark ``text`` for lupdate; the view translates it at run time."""
    return text


def _same(context: str, text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class SlowFacts:
    """What was measured; 0 / "" / None where unknown (that cause is then not claimed)."""

    slow_path_reason: str = ""  # ModelInfo.slow_path_reason
    kernel_note: str = ""  # ModelInfo.kernel_note
    dropped_messages: int = 0  # of the last reply (PromptPrepared / Stats)
    rss_bytes: int = 0  # this process's resident memory
    available_bytes: int = 0  # the machine's available memory (psutil)
    swapped_bytes: int = 0  # swapped in + out between the last two looks (psutil)
    cores: int = 0  # the threads the governor may use (0: no governor)
    threads: int = 0  # the count it settled on
    slowdowns: int = 0  # its "two steps far slower" events between the last two looks
    disk_free_bytes: int | None = None  # free space on the data folder's disk
    decode_tok_s: float = 0.0  # the last reply's decode speed
    expected_tok_s: float | None = None  # engine.hub.fit's figure for this model here


@dataclass(frozen=True, slots=True)
class Slowdown:
    """One cause and what to do about it, in the reader's words."""

    cause: str
    action: str


def _gib(n: int) -> str:
    return f"{n / GIB:.1f}"


def speed_is_low(facts: SlowFacts) -> bool:
    """The last reply ran well below what this machine's estimate expected."""
    expected = facts.expected_tok_s
    return bool(expected) and 0 < facts.decode_tok_s < SLOW_FRACTION * (expected or 0)


_CLOSE = QT_TRANSLATE_NOOP(
    "WhySlow",
    "Close programs you do not need, or choose a smaller model or quantisation.",
)
# Each cause: its words (with the figures' places) and what to do, in diagnose's order.
WORDS: dict[str, tuple[str, str]] = {
    "swap": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "The computer is swapping: {0} MB went to and from the disk since the last look.",
        ),
        _CLOSE,
    ),
    "memory": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Memory is nearly full: Hearth uses {0} GB and only {1} GB is left.",
        ),
        _CLOSE,
    ),
    "core": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Another program is using the processor: Hearth measured it runs best "
            "on {0} of {1} cores now.",
        ),
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Pause or close the busy program (a build, a video, another model); "
            "Hearth takes the core back by itself.",
        ),
    ),
    "slow_path": (
        QT_TRANSLATE_NOOP("WhySlow", "The model runs on the slower float32 path: {0}"),
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported architecture.",
        ),
    ),
    "kernel": (
        QT_TRANSLATE_NOOP("WhySlow", "Hearth's own kernel does not run on this processor: {0}"),
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Replies still work on ONNX Runtime's kernels; a smaller model is faster.",
        ),
    ),
    "disk": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "The disk is nearly full: {0} GB free where Hearth keeps its chats and caches.",
        ),
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "Free some space on that disk: without room the caches that spare re-"
            "reading a chat are not saved.",
        ),
    ),
    "context": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "The context is full: the {0} oldest messages were left out, and each "
            "reply reads the whole context again.",
        ),
        QT_TRANSLATE_NOOP("WhySlow", "Start a new chat, or choose a model with a longer context."),
    ),
    "speed": (
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "The last reply ran at {0:.1f} tokens/s; this computer should reach about {1:.1f}.",
        ),
        QT_TRANSLATE_NOOP(
            "WhySlow",
            "If no other cause is listed, close busy programs and ask again; a "
            "smaller model is faster.",
        ),
    ),
}


def causes(facts: SlowFacts) -> list[tuple[str, tuple[object, ...]]]:
    """The causes ``facts`` show as (kind, figures), the one likely to cost the most first."""
    found: list[tuple[str, tuple[object, ...]]] = []
    if facts.swapped_bytes >= SWAP_SEEN:
        found.append(("swap", (facts.swapped_bytes // MIB,)))
    if facts.rss_bytes and 0 < facts.available_bytes < LOW_RAM:
        found.append(("memory", (_gib(facts.rss_bytes), _gib(facts.available_bytes))))
    if facts.cores and (facts.threads < facts.cores or facts.slowdowns):
        found.append(("core", (facts.threads, facts.cores)))
    if facts.slow_path_reason:
        found.append(("slow_path", (facts.slow_path_reason,)))
    if facts.kernel_note:
        found.append(("kernel", (facts.kernel_note,)))
    if facts.disk_free_bytes is not None and facts.disk_free_bytes < LOW_DISK:
        found.append(("disk", (_gib(facts.disk_free_bytes),)))
    if facts.dropped_messages:
        found.append(("context", (facts.dropped_messages,)))
    if speed_is_low(facts):
        found.append(("speed", (facts.decode_tok_s, facts.expected_tok_s)))
    return found


def diagnose(facts: SlowFacts, translate: Translate = _same) -> list[Slowdown]:
    """The causes ``facts`` show in plain words, each with its action (``translate``:
    Qt's ``QCoreApplication.translate`` in the app, the English as written otherwise)."""
    found = []
    for kind, figures in causes(facts):
        cause, action = WORDS[kind]
        found.append(
            Slowdown(translate("WhySlow", cause).format(*figures), translate("WhySlow", action))
        )
    return found


def looks_slow(facts: SlowFacts) -> bool:
    """Whether the status bar offers "Why is this slow?": a slow reply, or any cause."""
    return bool(diagnose(facts))
