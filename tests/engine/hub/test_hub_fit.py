"""The fit verdict, the recommended quant, the speed estimate, quant tags and the catalogue,
on constructed summaries and file lists (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidParamsError, RemoteFileNotFoundError
from engine.hub.catalogue import load_catalogue
from engine.hub.fit import (
    FIXED_OVERHEAD,
    assess,
    best_quant,
    expected_tok_s,
    ram_for_size,
    record_decode_speed,
)
from engine.hub.search import HubFile, match_quant, quant_of
from engine.hub.summary import ModelSummary

GIB = 2**30


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))


def summary(ram: int, *, size: int = 4 * GIB, fast: bool = True) -> ModelSummary:
    return ModelSummary(
        path="x.gguf",
        name="X",
        architecture="llama",
        quantization="Q4_K_M",
        size_bytes=size,
        parameters=7 * 10**9,
        context_length=8192,
        ram_estimate_bytes=ram,
        fast_path=fast,
        fast_path_reason=None if fast else "the fast path does not know the architecture 'rwkv'",
    )


def files(*specs: tuple[str, float]) -> list[HubFile]:
    return [
        HubFile("r/R-GGUF", name, int(gib * GIB), "0" * 64, quant_of(name)) for name, gib in specs
    ]


def test_verdicts_from_ram_needed_against_available() -> None:
    assert assess(summary(5 * GIB), ram_available=16 * GIB).verdict == "fits"
    tight = assess(summary(14 * GIB), ram_available=16 * GIB)
    assert tight.verdict == "tight" and "close other programs" in tight.note
    wont = assess(summary(20 * GIB), ram_available=16 * GIB)
    assert wont.verdict == "wont_fit" and "smaller" in wont.note
    assert (wont.ram_needed_bytes, wont.ram_available_bytes) == (20 * GIB, 16 * GIB)
    slow = assess(summary(5 * GIB, fast=False), ram_available=16 * GIB)
    assert not slow.fast_path and "torch path" in slow.note and "rwkv" in slow.note


def test_expected_speed_uses_the_measured_figure_once_recorded() -> None:
    estimate, note = expected_tok_s(GIB)
    assert estimate is not None and estimate > 0 and "estimated" in note
    record_decode_speed(weight_bytes=GIB, tok_per_s=10.0)
    record_decode_speed(weight_bytes=2 * GIB, tok_per_s=4.0)  # 8 GiB/s: the mean is 9 GiB/s
    speed, note = expected_tok_s(3 * GIB)
    assert speed == pytest.approx(3.0) and "measured" in note
    fit = assess(summary(5 * GIB, size=3 * GIB), ram_available=64 * GIB)
    assert fit.expected_tok_s == pytest.approx(3.0)
    # The torch path reads float32 weights: 4 bytes per parameter, not the file's bytes.
    torch = assess(summary(5 * GIB, fast=False), ram_available=64 * GIB)
    assert torch.expected_tok_s == pytest.approx(9 * GIB / (4 * 7 * 10**9))


def test_best_quant_is_the_largest_quant_that_fits() -> None:
    repo = files(
        ("m-Q2_K.gguf", 2.7),
        ("m-Q4_K_M.gguf", 4.4),
        ("m-Q6_K.gguf", 5.9),
        ("m-Q8_0.gguf", 7.6),
        ("m-F16.gguf", 14.2),
    )
    assert best_quant(repo, ram_available=16 * GIB).quant == "Q8_0"  # never F16 when quants fit
    # A 4.4 GB Q4_K_M takes ~7.7 GB on the fast path (4-bit codes + float32 scale and block
    # sum per 32 weights): "fits" (a quarter left over) from ~10.3 GB available.
    assert best_quant(repo, ram_available=11 * GIB).quant == "Q4_K_M"
    assert best_quant(repo, ram_available=8 * GIB) is None
    assert best_quant(repo, ram_available=2 * GIB) is None
    split = files(
        ("m-Q8_0-00001-of-00002.gguf", 4.0),
        ("m-Q8_0-00002-of-00002.gguf", 3.6),
        ("m-Q4_K_M.gguf", 4.4),
    )
    assert best_quant(split, ram_available=64 * GIB).quant == "Q4_K_M"  # parts are not offered
    assert ram_for_size(4 * GIB) > 4 * GIB


@pytest.mark.parametrize("kind", ["Q8_0", "Q6_K", "Q5_0", "Q4_0", "Q4_1", "Q4_K", "IQ4_XS", "Q2_K"])
def test_size_rule_covers_what_the_fast_path_keeps(kind: str) -> None:
    """The size-only rule's factor for a plain quant is what the engine's header estimate
    (`resident_nbytes`) gives that type, with less than 10 % to spare."""
    import gguf

    from engine.gguf.repack import resident_nbytes

    qtype = gguf.GGMLQuantizationType[kind]
    block, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n, k = 64, 4096
    resident = resident_nbytes(qtype, n, k)
    file_bytes = n * k // block * type_size
    needed = ram_for_size(file_bytes, kind) - FIXED_OVERHEAD
    assert resident <= needed < 1.1 * resident, (kind, needed / file_bytes, resident / file_bytes)
    assert ram_for_size(GIB, "Q8_0") < ram_for_size(GIB, "Q4_K_M") < ram_for_size(GIB, "IQ2_XXS")


def test_quant_tags_and_matching() -> None:
    assert quant_of("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf") == "Q4_K_M"
    assert quant_of("Qwen3-8B-UD-Q4_K_XL.gguf") == "Q4_K_XL"
    assert quant_of("Phi-3.5-mini-instruct-IQ2_M.gguf") == "IQ2_M"
    assert quant_of("folder/Llama-3.2-1B-Instruct-f16.gguf") == "F16"
    assert quant_of("model.gguf") == ""
    repo = files(("m-Q4_K_M.gguf", 4.4), ("m-Q4_K_S.gguf", 4.1), ("m-Q8_0.gguf", 7.6))
    assert match_quant(repo, "q4_k_m").filename == "m-Q4_K_M.gguf"
    with pytest.raises(RemoteFileNotFoundError, match="available: Q4_K_M, Q4_K_S, Q8_0"):
        match_quant(repo, "Q5_K_M")
    split = files(("m-Q8_0-00001-of-00002.gguf", 4.0), ("m-Q8_0-00002-of-00002.gguf", 3.6))
    with pytest.raises(InvalidParamsError, match="split into 2 files"):
        match_quant(split, "Q8_0")


def test_catalogue_covers_sizes_languages_and_families() -> None:
    entries = load_catalogue()
    assert len({e.repo_id for e in entries}) == len(entries)
    assert all(e.repo_id.count("/") == 1 and e.repo_id.upper().endswith("GGUF") for e in entries)
    assert min(e.params_b for e in entries) <= 1 and max(e.params_b for e in entries) >= 14
    assert {
        "Qwen3.5",
        "Qwen3 2507",
        "Qwen3",
        "gpt-oss",
        "Llama 3.2",
        "Gemma 4",
        "Gemma 3",
        "Phi",
        "Mistral",
    } <= {e.family for e in entries}
    assert any(e.chinese for e in entries) and any(e.reasoning for e in entries)
    assert all(e.description and e.description_zh and e.licence for e in entries)
