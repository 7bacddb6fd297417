"""A verdict for each catalogue entry: which file to get and whether it fits here.

For one `CatalogueEntry`, `check_entry` lists the repo's GGUF files on the Hub, picks the best
quant that fits (`engine.hub.fit.best_quant`; the entry's default quant when none fits) and
judges it from its size (`file_fit`: no header is read, so 25 entries cost 25 small API calls;
the speed from the share of the weights a token reads, which the catalogue gives for a
mixture-of-experts model).
For a model that can see, the verdict carries the projector to download with it. When the
Hub cannot be reached, `estimate_entry` judges the entry's default quant from the
sizes in the catalogue asset (or parameters x bits per weight), marked as an estimate, so the
catalogue stays usable offline. Qt-free; the tab shows the results.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from app.hub import hub_calls
from app.hub.downloads import HubAccess

# Average bits per weight of llama.cpp's quant mixes (embeddings and norms included), used
# only when neither the Hub nor the catalogue gives the file's size.
BITS_PER_WEIGHT = {
    "Q2_K": 3.0,
    "Q3_K_M": 3.9,
    "Q4_0": 4.5,
    "Q4_K_S": 4.6,
    "Q4_K_M": 4.9,
    "Q5_K_M": 5.7,
    "Q6_K": 6.6,
    "Q8_0": 8.5,
    "MXFP4": 4.6,  # gpt-oss: MXFP4 experts, the rest at 8 bits or more
    "F16": 16.0,
    "BF16": 16.0,
}


@dataclass(frozen=True)
class EntryVerdict:
    """What the catalogue shows for one entry once it is checked."""

    entry: Any  # engine.hub.catalogue.CatalogueEntry
    file: Any  # engine.hub.search.HubFile: the recommended file
    fit: Any  # engine.hub.fit.Fit
    estimated: bool  # True: judged from the catalogue's sizes (the Hub was not reached)
    projector: Any = None  # the HubFile of its vision projector, downloaded with it; or None


def file_fit(
    file: Any,
    ram_available: int | None = None,
    active_fraction: float = 1.0,
    architecture: str = "",
) -> Any:
    """A `Fit` for a Hub file judged from its size alone (no header read), with the engine's
    own size rule (`ram_for_size`, as `best_quant` uses); the speed from ``active_fraction`` of
    its bytes (a mixture-of-experts model reads only its routed experts). The fast path is
    judged from the catalogue's ``architecture`` (assumed when not given); the header check
    (search tab) says for sure."""
    from engine.hub.fit import assess_size

    return assess_size(
        file.size_bytes,
        active_fraction=active_fraction,
        ram_available=ram_available,
        what=file.quant or file.filename,
        architecture=architecture,
    )


async def check_entry(
    entry: Any, access: HubAccess, ram_available: int | None = None
) -> EntryVerdict:
    """The entry's verdict from its file list on the Hub (raises the Hub's errors)."""
    from engine.hub.fit import best_quant
    from engine.hub.projectors import projector_of

    listing = await hub_calls.repo_listing(entry.repo_id, access)
    files = listing.models
    single = [f for f in files if f.split_parts == 1]
    if not single:
        raise LookupError(f"{entry.repo_id} has no single-file GGUF")
    best = best_quant(single, ram_available) or _default_file(single, entry.default_quant)
    fit = await asyncio.to_thread(
        file_fit, best, ram_available, entry.active_fraction, entry.architecture
    )
    # A model that can see comes with its projector (the entry's own, else the repo's F16).
    projector = projector_of(listing, entry.mmproj_file) if entry.multimodal else None
    return EntryVerdict(entry, best, fit, estimated=False, projector=projector)


async def estimate_entry(entry: Any, ram_available: int | None = None) -> EntryVerdict:
    """The entry's default quant judged from the catalogue alone (offline)."""
    from engine.hub.search import HubFile

    quant = entry.default_quant.upper()
    size = int(getattr(entry, "default_size_bytes", 0) or 0)
    if size <= 0:
        size = int(entry.params_b * 1e9 * BITS_PER_WEIGHT.get(quant, 4.9) / 8)
    name = getattr(entry, "default_file", "") or f"{entry.repo_id.rsplit('/', 1)[-1]}-{quant}"
    file = HubFile(entry.repo_id, name, size, None, quant)
    fit = await asyncio.to_thread(
        file_fit, file, ram_available, entry.active_fraction, entry.architecture
    )
    return EntryVerdict(entry, file, fit, estimated=True)


def _default_file(files: list[Any], quant: str) -> Any:
    """The file of the entry's default quant (the plain one of several with its tag); else the
    smallest (nothing fits anyway)."""
    from engine.hub.search import plain_per_quant

    wanted = plain_per_quant([f for f in files if f.quant == quant.upper()])
    return wanted[0] if wanted else min(files, key=lambda f: f.size_bytes)
