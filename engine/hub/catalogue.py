"""The curated catalogue of chat models in GGUF, shipped as assets/catalogue.json.

Owns `CatalogueEntry` and reading and checking the asset (`load_catalogue`): every entry names
a Hub repo of GGUF files, its size in billions of parameters, a one-line description, the
languages it serves well (``chinese`` marks those good in Chinese), whether it is a reasoning
model, and the quant to suggest first. Does not own search or downloads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engine.errors import CorruptModelError

CATALOGUE_PATH = Path(__file__).resolve().parents[2] / "assets" / "catalogue.json"


@dataclass(frozen=True)
class CatalogueEntry:
    repo_id: str
    family: str
    name: str
    params_b: float
    description: str
    languages: tuple[str, ...]
    chinese: bool
    reasoning: bool
    default_quant: str
    description_zh: str = ""  # the description in Simplified Chinese, for the zh_CN UI


def load_catalogue(path: Path | None = None) -> list[CatalogueEntry]:
    """The catalogue, smallest models first; CorruptModelError naming a malformed entry."""
    source = path or CATALOGUE_PATH
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        entries = [_entry(raw) for raw in data["models"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptModelError(f"the model catalogue {source} is unreadable: {exc}") from exc
    return sorted(entries, key=lambda e: (e.params_b, e.family, e.name))


def _entry(raw: dict[str, object]) -> CatalogueEntry:
    languages = raw.get("languages", ["en"])
    if not isinstance(languages, list):
        raise ValueError(f"{raw.get('repo_id')}: languages must be a list")
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
        description_zh=str(raw.get("description_zh", "")),
    )
