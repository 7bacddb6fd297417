"""Models that can see, with their vision projectors (issue 31 item 6): the catalogue names each
seeing model's mmproj, Hub listings keep projectors apart from models, a model downloads with
its projector (each sha256-verified, resumable, into one folder, two repos' ``mmproj-F16.gguf``
never colliding), and on disk a projector (general.architecture "clip", written with gguf-py)
is never listed as a model but paired with its model: in Hearth's folder, LM Studio's layout
and Ollama's manifests. Real HTTP on 127.0.0.1 (the fake Hub), real GGUF files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import gguf
import huggingface_hub.constants
import numpy as np
import pytest

from engine.errors import ChecksumMismatchError
from engine.hub.catalogue import load_catalogue
from engine.hub.download import download, pending_downloads
from engine.hub.library import list_models, projector_for
from engine.hub.names import saved_name
from engine.hub.pairing import Candidate, choose_projector, pairing_key
from engine.hub.projectors import download_with_projector, projector_of
from engine.hub.search import HubFile, list_gguf_files, list_repo_ggufs, match_quant
from tests.engine.support.fake_hub import FakeHub
from tests.engine.support.tiny_gguf import HIDDEN, write_tiny_gguf

QWEN = "unsloth/Qwen3.5-0.8B-GGUF"
GEMMA = "unsloth/gemma-4-E2B-it-GGUF"


def write_clip(path: Path, width: int = HIDDEN, seed: int = 0) -> Path:
    """An mmproj-like GGUF: general.architecture "clip", its projection width, one matrix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_string("clip.projector_type", "gemma3")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_uint32("clip.vision.projection_dim", width)
    rng = np.random.default_rng(seed)
    writer.add_tensor("mm.input_projection.weight", rng.standard_normal((width, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny(path: Path, **options: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_tiny_gguf(path, **options)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("src")
    return {
        "model": write_tiny_gguf(folder / "m.gguf").read_bytes(),
        "f16": write_clip(folder / "f16.gguf", seed=1).read_bytes(),
        "bf16": write_clip(folder / "bf16.gguf", seed=2).read_bytes() + b"\0" * 64,
        "other": write_clip(folder / "o.gguf", seed=3).read_bytes(),
    }


@pytest.fixture
def hub(files: dict[str, bytes]) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        fake.add(QWEN, "Qwen3.5-0.8B-Q8_0.gguf", files["model"])
        fake.add(QWEN, "mmproj-BF16.gguf", files["bf16"])
        fake.add(QWEN, "mmproj-F16.gguf", files["f16"])
        fake.add(GEMMA, "gemma-4-E2B-it-Q4_K_M.gguf", files["model"])
        fake.add(GEMMA, "mmproj-F16.gguf", files["other"])
        fake.add("tester/Text-GGUF", "text-Q4_1.gguf", files["model"])
        yield fake


# ---- the catalogue ------------------------------------------------------------------------


def test_every_seeing_catalogue_model_names_its_projector() -> None:
    entries = load_catalogue()
    seeing = [e for e in entries if e.multimodal]
    assert {e.family for e in seeing} == {"Qwen3.5", "Gemma 4", "Gemma 3"}
    assert all(e.mmproj_file == "mmproj-F16.gguf" for e in seeing)
    assert not any(e.mmproj_file for e in entries if not e.multimodal)
    note = json.loads(Path("assets/catalogue.json").read_text(encoding="utf-8"))["note"]
    assert "reads images with its mmproj" in note and "text only" not in note
    assert "not checked online" in note


# ---- the Hub ------------------------------------------------------------------------------


def test_a_listing_keeps_projectors_apart_and_prefers_f16(hub: FakeHub) -> None:
    listing = list_repo_ggufs(QWEN, endpoint=hub.endpoint)
    assert [f.filename for f in listing.models] == ["Qwen3.5-0.8B-Q8_0.gguf"]
    assert sorted(f.filename for f in listing.projectors) == ["mmproj-BF16.gguf", "mmproj-F16.gguf"]
    assert list_gguf_files(QWEN, endpoint=hub.endpoint) == listing.models
    chosen = projector_of(listing)
    assert chosen is not None and chosen.filename == "mmproj-F16.gguf"
    named = projector_of(listing, "mmproj-BF16.gguf")  # the catalogue's own choice
    assert named is not None and named.filename == "mmproj-BF16.gguf"
    missing = projector_of(listing, "mmproj-Q8_0.gguf")  # named but not there: the preferred
    assert missing == chosen
    assert projector_of(list_repo_ggufs("tester/Text-GGUF", endpoint=hub.endpoint)) is None


def test_each_projector_is_saved_under_its_models_name() -> None:
    assert saved_name(QWEN, "mmproj-F16.gguf") == "mmproj-Qwen3.5-0.8B-F16.gguf"
    assert saved_name(GEMMA, "mmproj-F16.gguf") == "mmproj-gemma-4-E2B-it-F16.gguf"
    named = "mmproj-Qwen2.5-VL-7B-Instruct-f16.gguf"  # already says whose: kept
    assert saved_name("bartowski/Qwen2.5-VL-7B-Instruct-GGUF", named) == named
    assert saved_name(QWEN, "Qwen3.5-0.8B-Q8_0.gguf") == "Qwen3.5-0.8B-Q8_0.gguf"


def test_a_model_downloads_with_its_projector_both_verified(
    hub: FakeHub, tmp_path: Path, files: dict[str, bytes]
) -> None:
    folder = tmp_path / "models"
    seen: list[tuple[int, int]] = []
    pairs = []
    for repo in (QWEN, GEMMA):
        listing = list_repo_ggufs(repo, endpoint=hub.endpoint)
        pairs.append(
            download_with_projector(
                listing.models[0],
                projector_of(listing),
                dest_dir=folder,
                endpoint=hub.endpoint,
                progress=lambda d, t: seen.append((d, t)),
            )
        )
    (qwen, qwen_mm), (gemma, gemma_mm) = pairs
    assert qwen_mm == folder / "mmproj-Qwen3.5-0.8B-F16.gguf"
    assert gemma_mm == folder / "mmproj-gemma-4-E2B-it-F16.gguf"  # no collision in one folder
    assert qwen_mm.read_bytes() == files["f16"] and gemma_mm.read_bytes() == files["other"]
    total = len(files["model"]) + len(files["other"])
    assert seen[-1] == (total, total)  # one count over both files of the last pair
    listed = {Path(m.path).name: m for m in list_models(include_other_apps=False)}
    assert set(listed) == {qwen.name, gemma.name}  # the projectors are no models
    assert listed[qwen.name].mmproj == str(qwen_mm)
    assert listed[gemma.name].mmproj == str(gemma_mm)
    assert projector_for(qwen) == qwen_mm and projector_for(gemma) == gemma_mm


def test_a_corrupt_projector_is_refused_and_a_cut_one_resumes(
    hub: FakeHub, tmp_path: Path, files: dict[str, bytes]
) -> None:
    folder = tmp_path / "models"
    listing = list_repo_ggufs(QWEN, endpoint=hub.endpoint)
    projector = projector_of(listing)
    assert projector is not None
    hub.repos[QWEN]["mmproj-F16.gguf"].corrupt = True
    with pytest.raises(ChecksumMismatchError, match=r"mmproj-F16\.gguf failed its sha256"):
        download_with_projector(
            listing.models[0], projector, dest_dir=folder, endpoint=hub.endpoint
        )
    assert (folder / "Qwen3.5-0.8B-Q8_0.gguf").is_file()  # the model stays, verified
    assert not (folder / "mmproj-Qwen3.5-0.8B-F16.gguf").exists()
    hub.repos[QWEN]["mmproj-F16.gguf"].corrupt = False
    hub.cut_after["mmproj-F16.gguf"] = 1000  # the connection drops once, mid-file
    _, path = download_with_projector(
        listing.models[0], projector, dest_dir=folder, endpoint=hub.endpoint
    )
    assert path is not None and hashlib.sha256(path.read_bytes()).hexdigest() == projector.sha256
    assert hub.ranges("mmproj-F16.gguf")[-1] == "bytes=1000-"  # resumed, not restarted
    assert pending_downloads(folder) == []


def test_a_paused_projector_is_offered_again_under_its_saved_name(
    hub: FakeHub, tmp_path: Path
) -> None:
    folder = tmp_path / "models"
    listing = list_repo_ggufs(GEMMA, endpoint=hub.endpoint)
    projector = projector_of(listing)
    assert projector is not None
    hub.trickle_after["mmproj-F16.gguf"] = (500, 0.05)
    import threading

    stop = threading.Event()

    def cancel_soon(done: int, _total: int) -> None:
        if done >= 500:
            stop.set()

    with pytest.raises(Exception, match="cancelled"):
        download(
            projector, dest_dir=folder, endpoint=hub.endpoint, progress=cancel_soon, cancel=stop
        )
    (pending,) = pending_downloads(folder)
    assert pending.file == HubFile(
        GEMMA, "mmproj-F16.gguf", projector.size_bytes, projector.sha256, "F16"
    )
    assert pending.part_path.name == "mmproj-gemma-4-E2B-it-F16.gguf.part"
    path = download(pending.file, dest_dir=folder, endpoint=hub.endpoint)
    assert path.name == "mmproj-gemma-4-E2B-it-F16.gguf"


# ---- on disk ------------------------------------------------------------------------------


def test_pairing_by_name_and_width() -> None:
    assert pairing_key("Qwen3.5-0.8B-Q8_0.gguf") == pairing_key("mmproj-Qwen3.5-0.8B-F16.gguf")
    assert pairing_key("mmproj-F16.gguf") == pairing_key("mmproj-model-f16.gguf") == ""
    here = Path("/m")
    two = [
        Candidate(here / "mmproj-Qwen3.5-2B-F16.gguf", 2048),
        Candidate(here / "mmproj-F16.gguf"),
    ]
    assert choose_projector(Candidate(here / "Qwen3.5-2B-Q4_K_M.gguf", 2048), two) == two[0].path
    # 27B is not 2B; the generic one is left, unless its width says it is another model's.
    assert choose_projector(Candidate(here / "Qwen3.5-27B-Q4_K_M.gguf", 5120), two) == two[1].path
    wide = [Candidate(here / "mmproj-F16.gguf", 1024)]
    assert choose_projector(Candidate(here / "Qwen3.5-27B-Q4_K_M.gguf", 5120), wide) is None
    elsewhere = [Candidate(Path("/other/mmproj-F16.gguf"))]
    assert choose_projector(Candidate(here / "x-Q4_K_M.gguf"), elsewhere) is None


def test_lm_studio_and_ollama_projectors_pair_and_are_never_models(tmp_path: Path) -> None:
    lms = tmp_path / "home" / ".lmstudio" / "models" / "lmstudio-community" / "gemma-3-4b-it-GGUF"
    model = tiny(lms / "gemma-3-4b-it-Q4_K_M.gguf")
    mmproj = write_clip(lms / "mmproj-model-f16.gguf")
    plain = tiny(lms.parent / "SmolLM2-GGUF" / "SmolLM2-Q8_0.gguf", seed=2)
    write_clip(lms.parent / "Wide-GGUF" / "mmproj-F16.gguf", width=HIDDEN * 2)
    wide_model = tiny(lms.parent / "Wide-GGUF" / "wide-Q4_1.gguf", seed=4)
    ollama = tmp_path / "home" / ".ollama" / "models"
    model_digest, projector_digest = "ab" * 32, "cd" * 32
    blob = tiny(ollama / "blobs" / f"sha256-{model_digest}", seed=3)
    projector_blob = write_clip(ollama / "blobs" / f"sha256-{projector_digest}")
    manifest = ollama / "manifests" / "registry.ollama.ai" / "library" / "gemma3" / "4b"
    manifest.parent.mkdir(parents=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{model_digest}"},
        {
            "mediaType": "application/vnd.ollama.image.projector",
            "digest": f"sha256:{projector_digest}",
        },
    ]
    manifest.write_text(json.dumps({"layers": layers}), encoding="utf-8")
    listed = {Path(m.path).name: m for m in list_models()}
    assert set(listed) == {model.name, plain.name, wide_model.name, blob.name}
    assert listed[model.name].mmproj == str(mmproj)
    assert listed[blob.name].mmproj == str(projector_blob) and listed[blob.name].name == "gemma3:4b"
    assert listed[plain.name].mmproj == ""  # text only
    assert listed[wide_model.name].mmproj == ""  # the projector of another width
    assert projector_for(model) == mmproj and projector_for(blob) == projector_blob
    assert projector_for(plain) is None and projector_for(wide_model) is None


def test_a_broken_projector_file_is_not_listed_as_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    tiny(folder / "a-Q4_1.gguf")
    (folder / "mmproj-a-F16.gguf").write_bytes(b"GGUF" + b"\0" * 10)
    listed = list_models(include_other_apps=False)
    assert [Path(m.path).name for m in listed] == ["a-Q4_1.gguf"] and listed[0].mmproj == ""


def test_match_quant_never_picks_a_projector(hub: FakeHub) -> None:
    files = list_gguf_files(QWEN, endpoint=hub.endpoint)
    assert match_quant(files, "Q8_0").filename == "Qwen3.5-0.8B-Q8_0.gguf"


# ---- the CLI ------------------------------------------------------------------------------


def test_pull_gets_the_projector_unless_told_not_to(hub: FakeHub, tmp_path: Path) -> None:
    from tests.engine.hub.test_hub_cli import lines, run_cli

    proc = run_cli(tmp_path, "pull", QWEN, "--quant", "Q8_0", "--json", endpoint=hub.endpoint)
    assert proc.returncode == 0, proc.stderr
    done = lines(proc)[-1]
    models = tmp_path / "models"
    assert done["path"] == str(models / "Qwen3.5-0.8B-Q8_0.gguf")
    assert done["mmproj"] == str(models / "mmproj-Qwen3.5-0.8B-F16.gguf")
    assert done["mmproj_sha256"] == hub.repos[QWEN]["mmproj-F16.gguf"].sha256
    listed = json.loads(run_cli(tmp_path, "models", "--hearth-only", "--json").stdout)
    assert [(Path(m["path"]).name, Path(m["mmproj"]).name) for m in listed] == [
        ("Qwen3.5-0.8B-Q8_0.gguf", "mmproj-Qwen3.5-0.8B-F16.gguf")
    ]
    text = run_cli(tmp_path, "models", "--hearth-only").stdout
    assert "can see" in text and "vision projector:" in text
    bare = run_cli(
        tmp_path, "pull", GEMMA, "--quant", "Q4_K_M", "--no-mmproj", "--json", endpoint=hub.endpoint
    )
    assert bare.returncode == 0, bare.stderr
    assert lines(bare)[-1]["mmproj"] is None
    assert not (models / "mmproj-gemma-4-E2B-it-F16.gguf").exists()
    text_only = run_cli(
        tmp_path, "pull", "tester/Text-GGUF", "--quant", "Q4_1", "--json", endpoint=hub.endpoint
    )
    assert text_only.returncode == 0 and lines(text_only)[-1]["mmproj"] is None


def test_deleting_the_last_model_of_a_projector_deletes_the_projector(tmp_path: Path) -> None:
    from engine.hub.library import delete_model

    folder = tmp_path / "models"
    q8 = tiny(folder / "Qwen3.5-0.8B-Q8_0.gguf")
    q4 = tiny(folder / "Qwen3.5-0.8B-Q4_K_M.gguf", seed=1)
    other = tiny(folder / "SmolLM2-Q8_0.gguf", seed=2)
    mmproj = write_clip(folder / "mmproj-Qwen3.5-0.8B-F16.gguf")
    assert delete_model(q8) == [q8]  # the Q4_K_M still reads images with it
    assert mmproj.is_file()
    assert delete_model(q4) == [q4, mmproj]  # nobody's now: it would lie hidden
    assert not mmproj.exists() and other.is_file()
    assert [Path(m.path).name for m in list_models(include_other_apps=False)] == [other.name]
