"""Sampling parameters in one place: `PARAMS`, the table of what each one is, and `SamplingParams`.

Owns, per parameter: its kind, valid range, the value that switches it off (the server's
default, as in the OpenAI API), the slider's range and step, the English label (the app
translates it), the OpenAI wire name, the CLI flag, and which backends honour it. Everything
else derives from this table: `SamplingParams.__post_init__` (validation), the app's sliders,
greying and Details text, the CLI flags, the server's request fields and the remote request
body. Defaults live on the `SamplingParams` fields, next to the rows. Torch-free and I/O-free;
`engine.types` re-exports it, so the app imports it from there.

Adding a sampler: a field and a row here, the filter in `engine.sampling`, and its label
marked for translation in `app.views.chat.param_labels` (a test checks the last one).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

from engine.errors import InvalidParamsError

Kind = Literal["float", "int", "seed", "strings"]
# Which remote endpoints honour a field: "all" (standard OpenAI API), "extended" (vLLM,
# llama.cpp, Hearth's server and unknown servers; api.openai.com rejects such fields), "none".
Remote = Literal["all", "extended", "none"]
SEED_LIMIT = 2**63


@dataclass(frozen=True, slots=True)
class Slider:
    """How the app shows a parameter: a slider over [low, high] in steps of ``step``."""

    low: float
    high: float
    step: float
    decimals: int


@dataclass(frozen=True, slots=True)
class Param:
    """One sampling parameter (a `SamplingParams` field) and everything derived from it."""

    name: str
    kind: Kind
    label: str  # English source string; the app translates it (context "SamplingParams")
    help: str
    low: float | None = None  # None: unbounded on that side
    high: float | None = None
    low_open: bool = False  # True: ``low`` itself is refused
    high_open: bool = False
    zero_means: str = ""  # 0 is also accepted below ``low``, meaning this ("greedy")
    neutral: object = None  # the value that switches it off (the OpenAI API's default)
    slider: Slider | None = None
    api: str | None = None  # field of an OpenAI-style request body; None: not on the wire
    wire_aliases: tuple[str, ...] = ()  # other servers' names: sent to remote, accepted by ours
    accepted_aliases: tuple[str, ...] = ()  # accepted by our server, never sent
    cli: str | None = None  # flag of `python -m engine generate`
    remote: Remote = "extended"
    beam: bool = False  # beam search honours it too

    def range_text(self) -> str:
        """The valid values in words, e.g. "in (0, 1]" or "0 (greedy) or in [0.01, 100]"."""
        if self.kind == "strings":
            return "a list of non-empty strings"
        if self.kind == "seed":
            return "an integer in [0, 2**63) or None"
        if self.high is None:
            span = f"{'>' if self.low_open else '>='} {self.low:g}"
        else:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            span = f"in {left}{self.low:g}, {self.high:g}{right}"
        return f"0 ({self.zero_means}) or {span}" if self.zero_means else span

    def error(self, value: object, shown: str | None = None) -> str | None:
        """Why ``value`` is invalid, naming the field ``shown`` (default: the param), or None."""
        what = self._type_error(value) or ("" if self._in_range(value) else self.range_text())
        return f"{shown or self.name} must be {what}, got {value!r}" if what else None

    def check(self, value: object, shown: str | None = None) -> None:
        message = self.error(value, shown)
        if message is not None:
            raise InvalidParamsError(message)

    def _type_error(self, value: object) -> str:
        """What ``value`` should have been when its type is wrong, else ""."""
        if self.kind in ("strings", "seed"):
            return ""  # their range_text says the type
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if self.kind == "int" and not (number and isinstance(value, int)):
            return "an integer"
        return "" if number else "a number"

    def _in_range(self, value: object) -> bool:
        if self.kind == "strings":
            return isinstance(value, tuple | list) and all(isinstance(s, str) and s for s in value)
        if self.kind == "seed":
            integer = isinstance(value, int) and not isinstance(value, bool)
            return value is None or (integer and 0 <= value < SEED_LIMIT)  # type: ignore[operator]
        assert isinstance(value, int | float)  # _type_error ran first
        if self.zero_means and value == 0:
            return True
        low, high = self.low, self.high
        above = low is None or (value > low if self.low_open else value >= low)
        below = high is None or (value < high if self.high_open else value <= high)
        return math.isfinite(value) and above and below


def _float(name: str, label: str, help: str, **more: object) -> Param:
    return Param(name, "float", label, help, **more)  # type: ignore[arg-type]


def _int(name: str, label: str, help: str, **more: object) -> Param:
    return Param(name, "int", label, help, **more)  # type: ignore[arg-type]


# Rows in the order the app shows them; the order they apply in is `engine.sampling`'s.
PARAMS: tuple[Param, ...] = (
    # Below 0.01 logits / temperature overflows float32 and the draw turns to noise.
    _float(
        "temperature", "Temperature", "divide logits by this; 0 means greedy",
        low=0.01, high=100, zero_means="greedy", neutral=1.0, slider=Slider(0.0, 2.0, 0.01, 2),
        api="temperature", cli="--temperature", remote="all",
    ),
    _int(
        "top_k", "Top-k", "keep the k most likely tokens; 0 switches it off",
        low=0, neutral=0, slider=Slider(0, 200, 1, 0), api="top_k", cli="--top-k",
    ),
    _float(
        "top_p", "Top-p", "keep the most likely tokens holding this much mass; 1 switches it off",
        low=0, high=1, low_open=True, neutral=1.0, slider=Slider(0.01, 1.0, 0.01, 2),
        api="top_p", cli="--top-p", remote="all",
    ),
    _float(
        "min_p", "Min-p", "drop tokens less likely than this times the top one; 0 switches it off",
        low=0, high=1, high_open=True, neutral=0.0, slider=Slider(0.0, 0.99, 0.01, 2),
        api="min_p", cli="--min-p",
    ),
    _float(
        "repetition_penalty", "Repetition penalty",
        "divide positive / multiply negative logits of tokens already in the prompt or reply "
        "(transformers, llama.cpp); 1 switches it off",
        low=0.01, high=100, neutral=1.0, slider=Slider(0.5, 2.0, 0.01, 2),
        api="repetition_penalty", wire_aliases=("repeat_penalty",), cli="--repetition-penalty",
        beam=True,
    ),
    _float(
        "presence_penalty", "Presence penalty",
        "subtract from the logit of every token the reply already holds (OpenAI); 0 switches "
        "it off",
        low=-2, high=2, neutral=0.0, slider=Slider(-2.0, 2.0, 0.01, 2),
        api="presence_penalty", cli="--presence-penalty", remote="all",
    ),
    _float(
        "frequency_penalty", "Frequency penalty",
        "subtract, per occurrence in the reply so far, from a token's logit (OpenAI); 0 "
        "switches it off",
        low=-2, high=2, neutral=0.0, slider=Slider(-2.0, 2.0, 0.01, 2),
        api="frequency_penalty", cli="--frequency-penalty", remote="all",
    ),
    Param(
        "seed", "seed", "Seed", "seed of the draw; none: fresh randomness each reply",
        api="seed", cli="--seed", remote="all",
    ),
    _int(
        "max_new_tokens", "Max tokens", "stop the reply after this many tokens",
        low=1, api="max_tokens", accepted_aliases=("max_completion_tokens",), cli="--max-tokens",
        remote="all", beam=True,
    ),
    Param(
        "stop", "strings", "Stop strings", "end the reply before any of these (repeatable)",
        neutral=(), api="stop", cli="--stop", remote="all", beam=True,
    ),
    _int(
        "num_beams", "Beams", "beam search over this many beams (non-streaming); 1: off",
        low=1, high=16, neutral=1, cli="--num-beams", remote="none", beam=True,
    ),
)  # fmt: skip
PARAM = {p.name: p for p in PARAMS}
LOCAL_PARAMS = frozenset(p.name for p in PARAMS)
REMOTE_STANDARD_PARAMS = frozenset(p.name for p in PARAMS if p.remote == "all")
REMOTE_EXTENDED_PARAMS = frozenset(p.name for p in PARAMS if p.remote != "none")


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How to pick each next token. ``temperature == 0`` means greedy.

    Sampling order (see `engine.sampling.sample_next_token`): 1 repetition penalty,
    2 presence and frequency penalties, 3 temperature, 4 top-k, 5 top-p, 6 min-p, 7 draw.
    Each parameter's `PARAM` row says its range and the value that switches it off.
    ``num_beams > 1`` selects beam search (non-streaming use; sampling filters ignored).
    The defaults are the app's "Balanced" sampling; the penalties are off by default, as in
    transformers, llama.cpp and the OpenAI API, so greedy decoding is plain argmax.
    """

    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    num_beams: int = 1

    def __post_init__(self) -> None:
        for param in PARAMS:
            param.check(getattr(self, param.name))
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def replace(self, **changes: object) -> SamplingParams:
        """A copy with ``changes`` applied and validated."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        d = dataclasses.asdict(self)
        d["stop"] = list(self.stop)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> SamplingParams:
        """Build from a dict, ignoring unknown keys (settings saved by newer versions)."""
        kwargs = {k: v for k, v in data.items() if k in PARAM}
        if isinstance(kwargs.get("stop"), list):
            kwargs["stop"] = tuple(kwargs["stop"])  # type: ignore[arg-type]
        return cls(**kwargs)  # type: ignore[arg-type]

    @classmethod
    def neutral(cls, **changes: object) -> SamplingParams:
        """Every filter switched off (the OpenAI API's defaults: temperature 1), plus
        ``changes``; what the server samples with for the fields a client leaves out."""
        values = {p.name: p.neutral for p in PARAMS if p.neutral is not None}
        return cls(**{**values, **changes})  # type: ignore[arg-type]
