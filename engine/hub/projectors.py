"""A model that can see, downloaded with its vision projector (mmproj) from the same repo.

Owns finding the projector to fetch with a model (`projector_of`: the catalogue entry's
``mmproj_file`` when it names one the repo has, else the repo's preferred one, F16 first,
`engine.hub.search.choose_projector`) and downloading the pair (`download_with_projector`):
the model, then its projector, into the same folder, each by `engine.hub.download.download`
(resumable, sha256-verified against the Hub's LFS hash, atomic), with one progress over both.
The projector is saved under its model's name (`engine.hub.names.saved_name`), so the models
folder can hold many. Does not own pairing files on disk (`engine.hub.pairing`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import RemoteFileNotFoundError
from engine.hub.download import ProgressFn, download
from engine.hub.search import HubFile, RepoGguf, choose_projector, find_file

DownloadFn = Callable[..., Path]


def projector_of(listing: RepoGguf, wanted: str = "") -> HubFile | None:
    """The projector to download with a model of this repo: ``wanted`` (a catalogue entry's
    ``mmproj_file``) when the repo lists it, else the repo's preferred one; None if it has
    none. The catalogue's names are not checked online, so a missing one falls back."""
    if wanted and listing.projectors:
        try:
            return find_file(listing.projectors, wanted)
        except RemoteFileNotFoundError:
            pass
    return choose_projector(listing.projectors)


def download_with_projector(
    model: HubFile,
    projector: HubFile | None,
    *,
    progress: ProgressFn | None = None,
    download_fn: DownloadFn = download,
    **options: Any,
) -> tuple[Path, Path | None]:
    """Download ``model`` and then ``projector`` (None: the model alone) with ``options``
    (dest_dir, token, endpoint, cancel, token_hosts) for both; (model path, projector path).
    ``progress`` sees one count over both files. A cancel or failure in either keeps what
    arrived; the next call finds the model in place and resumes the projector."""
    report = progress or (lambda _d, _t: None)
    extra = projector.size_bytes if projector is not None else 0
    model_total = {"n": model.size_bytes}

    def model_progress(done: int, total: int) -> None:
        model_total["n"] = total
        report(done, total + extra)

    path = download_fn(model, progress=model_progress, **options)
    if projector is None:
        return path, None
    first = model_total["n"]
    projector_path = download_fn(
        projector, progress=lambda done, total: report(first + done, first + total), **options
    )
    return path, projector_path
