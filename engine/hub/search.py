"""Hub search for GGUF repositories and a repository's GGUF files.

Owns `RepoHit` and `HubFile`, searching the Hub (or the mirror in HF_ENDPOINT) for GGUF repos
with huggingface_hub's `HfApi`, listing a repo's .gguf files with their sizes and LFS sha256
(`list_repo_ggufs`: the model files, and apart from them the vision projectors, ``mmproj*``
files), reading the quant tag from a file name and choosing a file by tag (`match_quant`; of
several files with one tag, such as unsloth's ``UD-Q4_K_M`` next to ``Q4_K_M``, the plain one)
and a repo's projector (`choose_projector`: F16 first, as the publishers name their default).
Does not own downloading (`engine.hub.download`) or judging the fit (`engine.hub.fit`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from engine.errors import InvalidParamsError, RemoteFileNotFoundError
from engine.hub.names import is_projector
from engine.hub.transport import hub_api, hub_errors

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
# The projector's types in the order offered: F16 is what publishers make their default
# (unsloth ships mmproj-F16 / -BF16 / -F32); BF16 and F32 are the same weights, larger or not
# read everywhere; a quantised projector loses more on images than it saves.
PROJECTOR_PREFERENCE = ("F16", "BF16", "F32", "Q8_0")
_QUANT = re.compile(r"^(?:I?Q[1-8](?:_[A-Z0-9]+)*|TQ[12]_0|F16|BF16|F32|FP16|MXFP4(?:_MOE)?)$")


@dataclass(frozen=True)
class RepoHit:
    """One repository found by `search_repos`."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: str | None  # ISO date, when the Hub says
    gated: bool


@dataclass(frozen=True)
class HubFile:
    """One .gguf file in a Hub repository."""

    repo_id: str
    filename: str  # path inside the repo (may include a folder)
    size_bytes: int
    sha256: str | None  # the LFS sha256 (None when the Hub gave none)
    quant: str  # "Q4_K_M", ... ; "" when the name carries no tag

    @property
    def split_parts(self) -> int:
        """How many parts the model is split into (1: a single file)."""
        m = _SPLIT.search(self.filename)
        return int(m.group(2)) if m else 1


@dataclass(frozen=True)
class RepoGguf:
    """A repo's GGUF files: the models, and apart from them its vision projectors."""

    models: list[HubFile]
    projectors: list[HubFile]


def choose_projector(projectors: list[HubFile]) -> HubFile | None:
    """The projector to download with a model: single-file, by `PROJECTOR_PREFERENCE`, then
    the smallest; None when the repo has none."""
    single = [p for p in projectors if p.split_parts == 1]
    if not single:
        return None

    def rank(p: HubFile) -> tuple[int, int, str]:
        order = PROJECTOR_PREFERENCE.index(p.quant) if p.quant in PROJECTOR_PREFERENCE else 99
        return (order, p.size_bytes, p.filename)

    return min(single, key=rank)


def quant_of(filename: str) -> str:
    """The quant tag in a GGUF file name, upper-case ("Q4_K_M", "IQ2_XS", "F16"); "" if none."""
    stem = _SPLIT.sub(".gguf", filename.rsplit("/", 1)[-1])
    stem = re.sub(r"\.gguf$", "", stem, flags=re.IGNORECASE)
    for token in reversed(re.split(r"[-.]", stem)):
        if _QUANT.match(token.upper()):
            return token.upper()
    return ""


def is_variant(file: HubFile) -> bool:
    """True for a publisher's variant of a quant (unsloth's dynamic ``UD-Q4_K_M``), which
    sits next to the plain ``Q4_K_M`` under the same tag."""
    stem = _SPLIT.sub("", file.filename.rsplit("/", 1)[-1])
    return bool(re.search(r"(?:^|[-_.])UD[-_.]", stem, re.IGNORECASE))


def plain_per_quant(files: list[HubFile]) -> list[HubFile]:
    """``files`` with one file per quant tag: where several share a tag, the plain one (no
    variant marker, then the shortest name). Files without a tag are all kept."""
    best: dict[str, HubFile] = {}
    for f in files:
        held = best.get(f.quant)
        if f.quant and (held is None or _plainness(f) < _plainness(held)):
            best[f.quant] = f
    return [f for f in files if not f.quant or best[f.quant] is f]


def _plainness(file: HubFile) -> tuple[bool, int, str]:
    return (is_variant(file), len(file.filename), file.filename)


def search_repos(
    query: str,
    *,
    limit: int = 30,
    token: str | None = None,
    endpoint: str | None = None,
    token_hosts: Collection[str] = (),
) -> list[RepoHit]:
    """GGUF repositories matching ``query``, most downloaded first. The token goes only where
    `transport.token_allowed` (``token_hosts``: the mirrors the user approved for it)."""
    api = hub_api(token=token, endpoint=endpoint, token_hosts=token_hosts)
    with hub_errors(what=f"searching for {query!r}", endpoint=endpoint):
        models = api.list_models(search=query, filter="gguf", sort="downloads", limit=limit)
        return [
            RepoHit(
                repo_id=m.id,
                downloads=int(m.downloads or 0),
                likes=int(m.likes or 0),
                last_modified=m.last_modified.isoformat() if m.last_modified else None,
                gated=bool(m.gated),
            )
            for m in models
        ]


def list_gguf_files(
    repo_id: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    token_hosts: Collection[str] = (),
) -> list[HubFile]:
    """The repo's .gguf model files (vision projectors left out) with sizes and LFS sha256."""
    return list_repo_ggufs(repo_id, token=token, endpoint=endpoint, token_hosts=token_hosts).models


def list_repo_ggufs(
    repo_id: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    token_hosts: Collection[str] = (),
) -> RepoGguf:
    """The repo's .gguf files with sizes and LFS sha256, models apart from projectors, each
    smallest first (one Hub call)."""
    api = hub_api(token=token, endpoint=endpoint, token_hosts=token_hosts)
    with hub_errors(what=repo_id, repo_id=repo_id, endpoint=endpoint):
        info = api.model_info(repo_id, files_metadata=True)
    files = []
    for s in info.siblings or []:
        name = s.rfilename
        if not name.lower().endswith(".gguf"):
            continue
        lfs = s.lfs
        size = int(lfs.size if lfs is not None else (s.size or 0))
        sha = lfs.sha256 if lfs is not None else None
        files.append(HubFile(repo_id, name, size, sha, quant_of(name)))
    files.sort(key=lambda f: (f.size_bytes, f.filename))
    return RepoGguf(
        [f for f in files if not is_projector(f.filename)],
        [f for f in files if is_projector(f.filename)],
    )


def match_quant(files: list[HubFile], tag: str) -> HubFile:
    """The one file whose quant is ``tag`` (case-insensitive); a clear error listing the
    quants there are when none or several match, or when the match is split in parts."""
    wanted = tag.strip().upper()
    hits = [f for f in files if f.quant == wanted] or [
        f for f in files if wanted and wanted in f.filename.upper()
    ]
    available = ", ".join(sorted({f.quant or f.filename for f in files})) or "none"
    if not hits:
        repo = files[0].repo_id if files else "the repository"
        raise RemoteFileNotFoundError(
            f"no GGUF file in {repo} matches the quant {tag!r}; available: {available}"
        )
    if len(hits) > 1 and all(f.quant == wanted for f in hits):
        # UD-Q4_K_M next to Q4_K_M: the plain single file (parts are not opened anyway).
        hits = plain_per_quant([f for f in hits if f.split_parts == 1]) or hits
    if any(f.split_parts > 1 for f in hits):
        raise InvalidParamsError(
            f"the {wanted} model is split into {hits[0].split_parts} files; Hearth opens "
            f"single-file GGUFs only — choose another quant (available: {available})"
        )
    if len(hits) > 1:
        names = ", ".join(f.filename for f in hits)
        raise InvalidParamsError(
            f"several files match {tag!r} ({names}); pass --file with the exact name"
        )
    return hits[0]


def find_file(files: list[HubFile], filename: str) -> HubFile:
    """The file named ``filename`` (exact path in the repo, or its base name)."""
    for f in files:
        if filename in (f.filename, f.filename.rsplit("/", 1)[-1]):
            return f
    repo = files[0].repo_id if files else "the repository"
    names = ", ".join(f.filename for f in files) or "none"
    raise RemoteFileNotFoundError(f"{repo} has no GGUF file {filename!r}; it has: {names}")
