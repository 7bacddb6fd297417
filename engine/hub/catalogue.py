"""The curated catalogue of chat models in GGUF, shipped as assets/catalogue.json.

Owns `CatalogueEntry` and reading and checking the asset (`load_catalogue`): every entry names
a Hub repo of GGUF files, the architecture its files declare, its size in billions of
parameters (all of them, and for a mixture-of-experts model those one token reads), a one-line
description, the languages it serves well (``chinese`` marks those good in Chinese), whether it
is a reasoning model, whether the model also reads images and the vision projector (mmproj)
file in its repo that lets it, its licence, and the quant and file to suggest first. Does not
own search, downloads (`engine.hub.projectors` fetches a model with its projector) or the fit
verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from engine.errors import CorruptModelError

T = TypeVar("T")
CATALOGUE_PATH = Path(__file__).resolve().parents[2] / "assets" / "catalogue.json"
# Licences that let anyone use, change and ship the model for any purpose; every other licence
# has terms of its own (use restrictions, a user cap, non-commercial use) worth reading first.
OPEN_LICENCES = frozenset({"Apache-2.0", "MIT"})


@dataclass(frozen=True)
class CatalogueEntry:
    repo_id: str
    family: str
    name: str
    params_b: float  # every parameter: what RAM must hold
    description: str
    languages: tuple[str, ...]
    chinese: bool
    reasoning: bool
    default_quant: str
    licence: str  # "Apache-2.0", "MIT", "Gemma Terms of Use", ...
    description_zh: str = ""  # the description in Simplified Chinese, for the zh_CN UI
    active_params_b: float | None = None  # read per token (mixture of experts); None: all
    multimodal: bool = False  # the model also reads images (with its mmproj)
    licence_url: str = ""
    default_file: str = ""  # the default quant's file name in the repo, when known
    recommended: bool = False  # the default pick
    architecture: str = ""  # the files' general.architecture ("qwen3moe"); "" when unknown
    # The vision projector in the same repo ("mmproj-F16.gguf"), downloaded with the model;
    # "" for a text-only model. Named by the publisher's usual naming, not checked online:
    # the download looks the file up in the repo's listing (`engine.hub.projectors`).
    mmproj_file: str = ""

    def __post_init__(self) -> None:
        if self.params_b <= 0:
            raise ValueError(f"{self.repo_id}: params_b must be > 0, got {self.params_b}")
        if not self.licence.strip():
            raise ValueError(f"{self.repo_id}: licence must be named")
        if self.mmproj_file and not self.multimodal:
            raise ValueError(f"{self.repo_id}: mmproj_file on a model that does not read images")
        active = self.active_params_b
        if active is not None and not 0 < active <= self.params_b:
            raise ValueError(
                f"{self.repo_id}: active_params_b must be in (0, params_b], got {active}"
            )

    @property
    def active_fraction(self) -> float:
        """The share of the weights one token reads: 1.0 for a dense model."""
        return (self.active_params_b or self.params_b) / self.params_b

    @property
    def open_licence(self) -> bool:
        return self.licence in OPEN_LICENCES


def catalogue_section(
    section: str, entry: Callable[[dict[str, object]], T], path: Path | None = None
) -> list[T]:
    """One list of the catalogue file (``models``, ``embedding_models``, ``guard_models``), each
    raw entry read by ``entry``; CorruptModelError naming the file when any of it is malformed."""
    source = path or CATALOGUE_PATH
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        return [entry(raw) for raw in data.get(section, [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptModelError(f"the model catalogue {source} is unreadable: {exc}") from exc


def languages_of(raw: dict[str, object]) -> tuple[str, ...]:
    """An entry's ``languages`` list (English when absent); ValueError when it is not a list."""
    languages = raw.get("languages", ["en"])
    if not isinstance(languages, list):
        raise ValueError(f"{raw.get('repo_id')}: languages must be a list")
    return tuple(str(x) for x in languages)


def load_catalogue(path: Path | None = None) -> list[CatalogueEntry]:
    """The catalogue, smallest models first; CorruptModelError naming a malformed entry."""
    source = path or CATALOGUE_PATH
    entries = catalogue_section("models", _entry, source)
    if not entries:
        raise CorruptModelError(f"the model catalogue {source} lists no models")
    repos = [e.repo_id for e in entries]
    if len(set(repos)) != len(repos):
        twice = sorted({r for r in repos if repos.count(r) > 1})
        raise CorruptModelError(f"the model catalogue {source} lists {', '.join(twice)} twice")
    return sorted(entries, key=lambda e: (e.params_b, e.family, e.name))


def _entry(raw: dict[str, object]) -> CatalogueEntry:
    languages = languages_of(raw)
    active = raw.get("active_params_b")
    return CatalogueEntry(
        repo_id=str(raw["repo_id"]),
        family=str(raw["family"]),
        name=str(raw["name"]),
        params_b=float(str(raw["params_b"])),
        description=str(raw["description"]),
        languages=tuple(str(x) for x in languages),
        chinese=bool(raw.get("chinese", "zh" in languages)),
        reasoning=bool(raw.get("reasoning", False)),
        default_quant=str(raw.get("default_quant", "Q4_K_M")),
        licence=str(raw["licence"]),
        description_zh=str(raw.get("description_zh", "")),
        active_params_b=None if active is None else float(str(active)),
        multimodal=bool(raw.get("multimodal", False)),
        licence_url=str(raw.get("licence_url", "") or ""),
        default_file=str(raw.get("default_file", "") or ""),
        recommended=bool(raw.get("recommended", False)),
        architecture=str(raw.get("architecture", "") or ""),
        mmproj_file=str(raw.get("mmproj_file", "") or ""),
    )
