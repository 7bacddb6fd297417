"""Which vision projector on disk belongs to which model: pairing by folder, name and width.

Owns the rule, with no file access: a projector (an mmproj GGUF, general.architecture
"clip") pairs with a model in the same folder when their names agree once quant tags and
"mmproj" are dropped (``mmproj-Qwen3.5-0.8B-F16.gguf`` and ``Qwen3.5-0.8B-Q8_0.gguf``), or one
name extends the other (``Qwen2.5-VL-7B`` beside ``Qwen2.5-VL-7B-Instruct``), or, failing
that, when the projector is named only by its type (``mmproj-F16.gguf``, ``mmproj-model-f16``:
LM Studio's layout, one repo a folder). A projector whose projection width is not the
model's embedding width never pairs (both read from the headers; 0: not known, not judged).
Does not own reading headers or folders (`engine.hub.library`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_SPLIT = re.compile(r"-\d{5}-of-\d{5}$", re.IGNORECASE)
# Quant and type tags (as `engine.hub.search.quant_of` reads them) and the words that say
# nothing about which model a file is.
_TAG = re.compile(
    r"^(?:I?Q[1-8](?:_[A-Z0-9]+)*|TQ[12]_0|F16|BF16|F32|FP16|FP32|MXFP4(?:_MOE)?|UD|MMPROJ|MODEL)$"
)


@dataclass(frozen=True)
class Candidate:
    """A file for pairing: its path and the embedding width its header gives (0: unknown)."""

    path: Path
    width: int = 0


def pairing_key(filename: str) -> str:
    """ "qwen3-5-0-8b" for both ``Qwen3.5-0.8B-Q8_0.gguf`` and ``mmproj-Qwen3.5-0.8B-F16.gguf``:
    the name without its extension, split suffix, quant tag and "mmproj", lower-case."""
    stem = re.sub(r"\.gguf$", "", Path(filename).name, flags=re.IGNORECASE)
    stem = _SPLIT.sub("", stem)
    words = [w for w in re.split(r"[-.\s]+", stem) if w and not _TAG.match(w.upper())]
    return "-".join(words).lower()


def choose_projector(model: Candidate, projectors: Sequence[Candidate]) -> Path | None:
    """The projector in ``model``'s folder that belongs to it, or None (see the module)."""
    here = [
        p
        for p in projectors
        if p.path.parent == model.path.parent
        and not (p.width and model.width and p.width != model.width)
    ]
    key = pairing_key(model.path.name)
    tiers: list[list[Candidate]] = [[], [], []]
    for p in here:
        other = pairing_key(p.path.name)
        if other and other == key:
            tiers[0].append(p)
        elif other and (key.startswith(other + "-") or other.startswith(key + "-")):
            tiers[1].append(p)
        elif not other:
            tiers[2].append(p)
    for tier in tiers:
        if tier:
            # Two of one tier (F16 and BF16 of the same projector): the first by name.
            return sorted(tier, key=lambda p: p.path.name)[0].path
    return None
