"""The late-2026 catalogue, mixture-of-experts fit and the plain quant of a repo.

The catalogue asset's schema (every entry has a licence, no repo twice, the default pick is
good in Chinese); the fit verdict and expected speed of a mixture-of-experts GGUF written with
gguf-py (memory holds the whole file, speed follows the routed experts' bytes); and, on the
fake Hub, that ``UD-Q4_K_M`` next to ``Q4_K_M`` resolves to the plain file everywhere a quant
is chosen (best quant, a quant tag, the catalogue's default).
"""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest

from engine.errors import CorruptModelError
from engine.hub.catalogue import OPEN_LICENCES, load_catalogue
from engine.hub.fit import assess, assess_size, best_quant, record_decode_speed
from engine.hub.search import HubFile, list_gguf_files, match_quant, plain_per_quant, quant_of
from engine.hub.summary import summarize_file, weights_per_token
from tests.engine.support.fake_hub import FakeHub

GIB = 2**30
HIDDEN, FFN, EXPERTS, USED, LAYERS, VOCAB = 64, 32, 8, 2, 2, 512


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))


# ------------------------------------------------------------------------------- the asset


def test_every_entry_has_a_licence_and_the_schema_holds() -> None:
    entries = load_catalogue()
    assert len({e.repo_id for e in entries}) == len(entries) >= 15
    for e in entries:
        assert e.repo_id.count("/") == 1 and e.repo_id.upper().endswith("GGUF"), e.repo_id
        assert e.licence.strip() and e.description and e.description_zh, e.name
        assert e.licence_url.startswith("https://"), e.name
        assert e.architecture and e.default_quant, e.name
        assert not e.default_file or quant_of(e.default_file) == e.default_quant, e.name
        assert 0 < e.active_fraction <= 1
    assert {e.licence for e in entries} >= {
        "Apache-2.0",
        "MIT",
        "Gemma Terms of Use",
        "Llama 3.2 Community License",
    }
    assert {e.licence for e in entries} >= OPEN_LICENCES


def test_late_2026_models_are_in_and_what_they_supersede_is_out() -> None:
    by_name = {e.name: e for e in load_catalogue()}
    for name in (
        "Qwen3.5 0.8B",
        "Qwen3.5 2B",
        "Qwen3.5 4B",
        "Qwen3.5 9B",
        "Qwen3 4B Instruct 2507",
        "Qwen3 4B Thinking 2507",
        "Qwen3 30B-A3B Instruct 2507",
        "gpt-oss 20B",
        "Gemma 4 E2B",
        "Gemma 4 E4B",
        "Phi-4 mini reasoning",
    ):
        assert name in by_name, name
    families = {e.family for e in by_name.values()}
    assert not families & {"Qwen2.5", "DeepSeek-R1 Distill"}
    assert not {"Qwen3 0.6B", "Qwen3 4B", "Gemma 3 1B", "Phi-3.5 mini Instruct"} & set(by_name)
    (pick,) = [e for e in by_name.values() if e.recommended]
    assert pick.family == "Qwen3.5" and pick.chinese
    moe = by_name["Qwen3 30B-A3B Instruct 2507"]
    assert moe.architecture == "qwen3moe" and moe.active_fraction < 0.15
    assert by_name["gpt-oss 20B"].default_quant == "MXFP4"
    assert by_name["Qwen3.5 4B"].multimodal and not by_name["Qwen3 4B Instruct 2507"].multimodal
    sizes = sorted(e.params_b for e in by_name.values())
    assert sizes[0] <= 1 and sizes[-1] >= 30  # a spread from any laptop to 32 GB machines


def test_an_entry_without_a_licence_or_a_repo_twice_is_refused(tmp_path: Path) -> None:
    from engine.hub.catalogue import CATALOGUE_PATH

    data = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    first = data["models"][0]
    bad = tmp_path / "catalogue.json"
    bad.write_text(json.dumps({**data, "models": [{**first, "licence": " "}]}), "utf-8")
    with pytest.raises(CorruptModelError, match="licence must be named"):
        load_catalogue(bad)
    no_field = {k: v for k, v in first.items() if k != "licence"}
    bad.write_text(json.dumps({**data, "models": [no_field]}), "utf-8")
    with pytest.raises(CorruptModelError, match="licence"):
        load_catalogue(bad)
    bad.write_text(json.dumps({**data, "models": [first, first]}), "utf-8")
    with pytest.raises(CorruptModelError, match="twice"):
        load_catalogue(bad)
    over = {**first, "active_params_b": first["params_b"] * 2}
    bad.write_text(json.dumps({**data, "models": [over]}), "utf-8")
    with pytest.raises(CorruptModelError, match="active_params_b"):
        load_catalogue(bad)


# ------------------------------------------------------------------- mixture-of-experts fit


def write_moe_gguf(path: Path, *, experts: int = EXPERTS, used: int = USED) -> Path:
    """A qwen3moe-shaped GGUF (Q8_0 matrices, an untied output) with ``experts`` experts per
    layer of which ``used`` are routed; ``experts=0`` writes the dense equivalent."""
    import gguf

    rng = np.random.default_rng(0)
    arch = "qwen3moe" if experts else "qwen3"
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(LAYERS)
    writer.add_context_length(1024)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_license("apache-2.0")
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(used)
        writer.add_expert_feed_forward_length(FFN)

    def q8(name: str, *shape: int) -> None:
        data = rng.standard_normal(shape).astype(np.float32)
        quantised = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(name, quantised, raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    q8("token_embd.weight", VOCAB, HIDDEN)
    q8("output.weight", VOCAB, HIDDEN)
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    for i in range(LAYERS):
        for name, rows in (("attn_q", HIDDEN), ("attn_k", 32), ("attn_v", 32)):
            q8(f"blk.{i}.{name}.weight", rows, HIDDEN)
        q8(f"blk.{i}.attn_output.weight", HIDDEN, HIDDEN)
        if experts:
            writer.add_tensor(
                f"blk.{i}.ffn_gate_inp.weight",
                rng.standard_normal((experts, HIDDEN)).astype(np.float32),
            )
            q8(f"blk.{i}.ffn_gate_exps.weight", experts, FFN, HIDDEN)
            q8(f"blk.{i}.ffn_up_exps.weight", experts, FFN, HIDDEN)
            q8(f"blk.{i}.ffn_down_exps.weight", experts, HIDDEN, FFN)
        else:
            q8(f"blk.{i}.ffn_gate.weight", FFN * USED, HIDDEN)
            q8(f"blk.{i}.ffn_up.weight", FFN * USED, HIDDEN)
            q8(f"blk.{i}.ffn_down.weight", HIDDEN, FFN * USED)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_moe_summary_counts_only_the_routed_experts_per_token(tmp_path: Path) -> None:
    from engine.gguf.header import read_gguf_summary

    path = write_moe_gguf(tmp_path / "moe.gguf")
    header = read_gguf_summary(path)
    experts = sum(t.nbytes for t in header.tensors if "_exps." in t.name)
    embedding = next(t.nbytes for t in header.tensors if t.name == "token_embd.weight")
    rest = sum(t.nbytes for t in header.tensors) - experts - embedding
    active, active_params = weights_per_token(header)
    assert active == rest + experts * USED // EXPERTS  # the embedding is a lookup
    s = summarize_file(path)
    assert (s.expert_count, s.expert_used_count) == (EXPERTS, USED)
    assert s.bytes_per_token == active < s.size_bytes / 2
    assert s.parameters_per_token == active_params < s.parameters / 2
    assert s.ram_estimate_bytes > s.size_bytes  # memory holds every expert
    assert s.licence == "apache-2.0"  # general.license, as the file states it
    # The dense twin (the same layers with one FFN as wide as the routed experts) reads the
    # same number of weights per token; tied embeddings are read whole as the output.
    dense = summarize_file(write_moe_gguf(tmp_path / "dense.gguf", experts=0))
    assert dense.expert_count == 0
    assert dense.parameters_per_token == active_params - LAYERS * EXPERTS * HIDDEN  # no router


def test_moe_speed_follows_active_bytes_and_memory_the_whole_file(tmp_path: Path) -> None:
    moe = summarize_file(write_moe_gguf(tmp_path / "moe.gguf"))
    dense = summarize_file(write_moe_gguf(tmp_path / "dense.gguf", experts=0))
    record_decode_speed(weight_bytes=GIB, tok_per_s=10.0)  # 10 GiB/s of weights read
    fit_moe = assess(moe, ram_available=64 * GIB)
    fit_dense = assess(dense, ram_available=64 * GIB)
    assert fit_moe.expected_tok_s == pytest.approx(10 * GIB / moe.bytes_per_token)
    assert fit_moe.expected_tok_s > 2 * 10 * GIB / moe.size_bytes  # not the whole file's speed
    assert fit_moe.expected_tok_s == pytest.approx(fit_dense.expected_tok_s, rel=0.1)
    assert "2 of 8 experts" in fit_moe.note and "experts" not in fit_dense.note
    assert fit_moe.ram_needed_bytes == moe.ram_estimate_bytes
    # Too little RAM for every expert: won't fit, however few a token reads.
    assert assess(moe, ram_available=moe.size_bytes // 2).verdict == "wont_fit"


def test_a_size_only_fit_takes_the_active_share_for_speed_and_the_file_for_memory() -> None:
    record_decode_speed(weight_bytes=GIB, tok_per_s=10.0)
    size = 18 * GIB  # a 30B-A3B Q4_K_M
    # ~32 GB on the fast path today, by the size rule for an untagged file (4-bit codes +
    # float32 scale and block sum per 32 weights; engine.hub.fit.SIZE_FACTOR): "tight" with
    # 36 GB available, not with 24.
    dense = assess_size(size, ram_available=36 * GIB)
    moe = assess_size(size, active_fraction=3.3 / 30.5, ram_available=36 * GIB)
    assert moe.ram_needed_bytes == dense.ram_needed_bytes > size
    assert moe.verdict == dense.verdict == "tight"
    assert moe.expected_tok_s == pytest.approx(dense.expected_tok_s * 30.5 / 3.3)
    assert "reads about 11% of the weights" in moe.note
    unknown = assess_size(GIB, architecture="mamba9", ram_available=24 * GIB)
    assert not unknown.fast_path and "mamba9" in unknown.note
    assert assess_size(GIB, architecture="qwen3", ram_available=24 * GIB).fast_path
    with pytest.raises(ValueError, match="active_fraction"):
        assess_size(GIB, active_fraction=0.0)


# ------------------------------------------------------------------ the plain quant of a tag


def test_plain_file_wins_over_a_variant_with_the_same_tag() -> None:
    def f(name: str, gib: float) -> HubFile:
        return HubFile("u/M-GGUF", name, int(gib * GIB), None, quant_of(name))

    repo = [
        f("M-UD-Q4_K_M.gguf", 4.6),
        f("M-Q4_K_M.gguf", 4.4),
        f("M-UD-Q4_K_XL.gguf", 4.8),
        f("M-UD-Q8_K_XL.gguf", 9.9),
        f("M-Q8_0.gguf", 7.6),
    ]
    assert [x.filename for x in plain_per_quant(repo)] == [
        "M-Q4_K_M.gguf",
        "M-UD-Q4_K_XL.gguf",  # alone under its tag: kept
        "M-UD-Q8_K_XL.gguf",
        "M-Q8_0.gguf",
    ]
    assert match_quant(repo, "q4_k_m").filename == "M-Q4_K_M.gguf"
    # 10.5 GiB available: both Q4_K_M files fit comfortably, Q4_K_XL does not; the larger
    # UD twin would win on size alone.
    assert best_quant(repo, ram_available=int(10.5 * GIB)).filename == "M-Q4_K_M.gguf"
    split_plain = [
        f("M-Q4_K_M-00001-of-00002.gguf", 2.2),
        f("M-Q4_K_M-00002-of-00002.gguf", 2.2),
        f("M-UD-Q4_K_M.gguf", 4.6),
    ]
    assert match_quant(split_plain, "Q4_K_M").filename == "M-UD-Q4_K_M.gguf"  # one file


def test_the_fake_hub_repo_with_ud_files_resolves_to_the_plain_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # see test_hub_download
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    mb = 2**20
    repo = "unsloth/Qwen3-4B-Instruct-2507-GGUF"
    with FakeHub() as hub:
        for name, size in (
            ("Qwen3-4B-Instruct-2507-UD-Q4_K_M.gguf", 2600 * mb),
            ("Qwen3-4B-Instruct-2507-Q4_K_M.gguf", 2500 * mb),
            ("Qwen3-4B-Instruct-2507-UD-Q8_0.gguf", 4400 * mb),
            ("Qwen3-4B-Instruct-2507-Q8_0.gguf", 4300 * mb),
        ):
            hub.add(repo, name, b"x", advertised_size=size)
        files = list_gguf_files(repo, endpoint=hub.endpoint)
    assert len(files) == 4
    assert match_quant(files, "Q4_K_M").filename == "Qwen3-4B-Instruct-2507-Q4_K_M.gguf"
    assert best_quant(files, ram_available=16 * GIB).filename == (
        "Qwen3-4B-Instruct-2507-Q8_0.gguf"
    )
    assert best_quant(files, ram_available=6 * GIB).filename == (
        "Qwen3-4B-Instruct-2507-Q4_K_M.gguf"
    )


def test_a_moe_header_read_from_the_hub_gives_the_same_per_token_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.hub.remote_header import summarize_url
    from engine.hub.transport import file_url

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # see test_hub_download
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    path = write_moe_gguf(tmp_path / "moe.gguf")
    local = summarize_file(path)
    with FakeHub() as hub:
        hub.add("tester/MoE-GGUF", "moe-Q8_0.gguf", path.read_bytes())
        remote = summarize_url(file_url("tester/MoE-GGUF", "moe-Q8_0.gguf", endpoint=hub.endpoint))
    assert (remote.bytes_per_token, remote.size_bytes) == (local.bytes_per_token, local.size_bytes)
    assert (remote.expert_count, remote.expert_used_count, remote.licence) == (
        EXPERTS,
        USED,
        "apache-2.0",
    )


def test_decode_bytes_of_a_file_are_its_per_token_bytes_or_else_its_size(tmp_path: Path) -> None:
    from engine.hub.summary import decode_bytes_of_file

    path = write_moe_gguf(tmp_path / "moe.gguf")
    assert decode_bytes_of_file(path) == summarize_file(path).bytes_per_token < path.stat().st_size
    odd = tmp_path / "odd.gguf"
    odd.write_bytes(b"not a model" * 10)
    assert decode_bytes_of_file(odd) == 110  # a speed record is never worth an error
