"""A decode step rounds exactly as the same token inside any longer run, on every architecture
the fast path runs (tiny random Q4_K_M GGUFs), or the loop does not speculate on it.

Why: the app speculates by default (prompt lookup), and speculation may never change a greedy
reply. A plain decode step is a 1-token forward; a verified draft is a multi-row one; a cold
prompt is a prefill. The graph runs a 1-token step's attention as row 0 of a 2-row run
(`engine.fastpath.graph._one_row_pad`), so its logits and K/V equal the same token's row in a
run of 2, 4 or 9 rows and in a cold prefill, bit for bit. Gemma 3 and Gemma 4 graphs once
skipped that (their image pass) and parted by 0.06 logit after a few steps.

Qwen3.5's hybrids (qwen35, qwen35moe) on ONNX ops cannot: a DeltaNet layer updates its state
with the recurrent step for one token and with the chunked delta rule (matrix products, a
unit-triangular inverse) for more, which sum in other orders. Their runners say so
(``exact_steps`` False) and the loop then decodes plainly however it is asked. On the kernel's
native DeltaNet ops they are exact (tests/engine/loop/test_hybrid_speculation.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.configs import tiny_config
from bench.synth.core import DENSE_ARCHS, write_tiny_model
from bench.synth.gemma4 import tiny_gemma4_config, write_tiny_gemma4
from bench.synth.gemma4_moe import TINY_GEMMA4_MOE
from bench.synth.llama_family import write_tiny_granite, write_tiny_smollm3
from bench.synth.moe import write_moe_model
from bench.synth.qwen3vl import write_tiny_qwen3vl
from bench.synth.qwen35 import write_tiny_qwen35
from bench.synth.qwen35moe import write_tiny_qwen35moe
from engine import generate
from engine.arch import ARCHS
from engine.engine import Engine
from engine.fastpath.plan import kernel_enabled
from engine.runners.reuse import SHORT_TOTAL
from engine.speculative import DraftVerifier
from engine.types import Finished, GenerationRequest, Message, SamplingParams
from tests.engine.support.fast_runner import build_fast_runner

QUANT = "Q4_K_M"
WRITERS: dict[str, Callable[[Path], object]] = {
    **{arch: partial(write_tiny_model, arch=arch, quant=QUANT) for arch in DENSE_ARCHS},
    "smollm3": lambda path: write_tiny_smollm3(path, QUANT),
    "granite": lambda path: write_tiny_granite(path, QUANT),
    "qwen3moe": lambda path: write_moe_model(path, "qwen3moe", QUANT, reference=False),
    "gpt-oss": lambda path: write_moe_model(path, "gpt-oss", QUANT, reference=False),
    "gemma4": lambda path: write_tiny_gemma4(path, QUANT),
    "gemma4-moe": lambda path: write_tiny_gemma4(
        path, QUANT, tiny_gemma4_config(**TINY_GEMMA4_MOE)
    ),
    "qwen3vl": lambda path: write_tiny_qwen3vl(path, QUANT),
    "qwen3vlmoe": lambda path: write_tiny_qwen3vl(path, QUANT, moe=True),
    "qwen35": lambda path: write_tiny_qwen35(path, QUANT),
    "qwen35moe": lambda path: write_tiny_qwen35moe(path, QUANT),
}
RECURRENT = ("qwen35", "qwen35moe")
# heads of 256 as in the real Gemma 3 270M (the window past the tests' lengths, as there)
WIDE_GEMMA3 = tiny_config("gemma3", head_dim=256, query_pre_attn_scalar=256, sliding_window=512)
EXACT = tuple(name for name in WRITERS if name not in RECURRENT)
PROMPT = [17, 40, 99, 5, 230, 61, 8, 17, 40, 99, 5, 230, 61, 8]
IDS = [int(x) for x in np.random.default_rng(1).integers(0, 256, 24)]
# Dense MLPs, projections and head on the C kernel (as in files of 2 GiB and up), or every
# matrix on ONNX Runtime's MatMulNBits (the path taken where the kernel cannot be built).
KERNELS = {
    "ort": {"HEARTH_EXPERT_KERNEL": "0", "HEARTH_DELTA_OP": "0"},
    "kernel": {"HEARTH_DENSE_KERNEL": "1"},
}


def test_every_fast_path_architecture_is_covered() -> None:
    assert set(ARCHS) <= set(WRITERS), "a new architecture needs a tiny writer here"


def _runner(name: str, kernels: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    if kernels == "kernel" and not kernel_enabled():
        pytest.skip("the C kernel is not built here")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for key, value in KERNELS[kernels].items():
        monkeypatch.setenv(key, value)
    path = tmp_path / f"{name}.gguf"
    WRITERS[name](path)
    runner: Any = build_fast_runner(path)
    assert runner is not None
    if kernels == "ort":
        assert runner.kernel_ops is None
    elif runner.kernel_ops is None:  # gemma4's dense MLPs stay MatMulNBits: "ort" covers it
        pytest.skip(f"{name}'s tiny graph has no kernel op")
    return runner


def _steps_and_rows(
    runner: Any, prompt: list[int] = PROMPT
) -> tuple[np.ndarray, dict[int, np.ndarray], np.ndarray]:
    """IDS after ``prompt``: one at a time; in runs of 2, 4 and 9 rows; and in a cold prefill."""
    runner.reset()
    runner.extend(prompt, last_only=True)
    single = np.stack([runner.extend([i], last_only=True)[0] for i in IDS])
    rows = {}
    for size in (2, 4, 9):  # a sampled token and 1, 3 or 8 drafted ids
        runner.crop(len(prompt))
        runs = [runner.extend(IDS[j : j + size]) for j in range(0, len(IDS), size)]
        rows[size] = np.concatenate(runs)
    runner.reset()
    cold = runner.extend(prompt + IDS)[len(prompt) :]
    return single, rows, cold


def test_wide_heads_are_exact_after_the_first_short_total_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Heads of 256 (real Gemma 3 270M, Gemma 4) on GroupQueryAttention: a run ending within
    the first SHORT_TOTAL positions rounds apart from a longer run, so its rows are not
    reusable and the loop speculates only after a prompt that long; past it steps are exact as
    everywhere. (The kernel's HearthAttention has no such lengths: the test after these.)"""
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_ATTENTION_OP", "0")
    path = tmp_path / "gemma3-wide.gguf"
    write_tiny_model(path, "gemma3", QUANT, config=WIDE_GEMMA3)
    runner: Any = build_fast_runner(path)
    assert runner.exact_steps and runner.exact_from == SHORT_TOTAL
    long_prompt = [int(x) for x in np.random.default_rng(2).integers(0, 256, SHORT_TOTAL + 6)]
    single, rows, cold = _steps_and_rows(runner, long_prompt)
    for size, logits in rows.items():
        assert bool((logits == single).all()), f"{size}-row runs round apart"
    assert bool((cold == single).all())
    runner.reset()
    short = runner.extend(long_prompt[:40])
    assert runner.reusable_length == 0
    runner.reset()
    longer = runner.extend(long_prompt)[:40]
    assert runner.reusable_length == len(long_prompt)
    assert not bool((short == longer).all())  # the reason (if this passes, drop exact_from)


def test_wide_heads_cut_a_verify_run_at_each_key_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``exact_from`` the same holds every KEY_BLOCK keys (192, 320, ...): a row rounds
    one way while its run's keys end at or below such a boundary and another past it, so a
    9-row verify just before one parts from its steps (the reason). The runner's
    ``exact_rows`` cuts a run there, and the verifier drafts no further: the cut runs equal
    their steps, and a reply drafted across 192 keeps the plain ids (before the cut the real
    Gemma 3 270M and Qwen3.5 parted there). GroupQueryAttention's, as the test before."""
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_ATTENTION_OP", "0")
    path = tmp_path / "gemma3-wide.gguf"
    write_tiny_model(path, "gemma3", QUANT, config=WIDE_GEMMA3)
    runner: Any = build_fast_runner(path)
    seq = [int(x) for x in np.random.default_rng(4).integers(0, 256, 230)]
    runner.reset()
    runner.extend(seq)
    whole, cut = [], []
    for p in range(176, 200):
        runner.crop(p)
        steps = np.stack([runner.extend([t], last_only=True)[0] for t in seq[p : p + 9]])
        for cut_short, parted in ((False, whole), (True, cut)):
            runner.crop(p)
            rows = runner.exact_rows(9) if cut_short else 9
            if not bool((runner.extend(seq[p : p + rows]) == steps[:rows]).all()):
                parted.append(p)
    assert whole and not cut, (whole, cut)
    runner.reset()
    logits = runner.extend(seq[:150], last_only=True)[0]
    plain = []
    for _ in range(70):
        plain.append(int(np.argmax(logits)))
        logits = runner.extend([plain[-1]], last_only=True)[0]
    runner.reset()
    logits = runner.extend(seq[:150], last_only=True)[0]
    verifier = DraftVerifier(runner, clock=lambda: 0.0)
    ids: list[int] = []
    for _ in range(70):  # drafts from a hint holding the plain reply: they hold up to 192
        ids.append(int(np.argmax(logits)))
        logits = verifier.next_logits(ids[-1], [*plain, *seq[:150], *ids])
    assert ids == plain and verifier.accepted > 30


@pytest.mark.skipif(not kernel_enabled(), reason="the C kernel cannot be built here")
def test_wide_heads_on_the_kernels_attention_are_exact_at_every_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same wide heads on HearthAttention: a short run's rows equal a longer run's, every
    row of a 9-row verify across 192 keys equals its step, and the runner cuts nothing."""
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "gemma3-wide.gguf"
    write_tiny_model(path, "gemma3", QUANT, config=WIDE_GEMMA3)
    runner: Any = build_fast_runner(path)
    assert runner.exact_steps and runner.exact_from == 0
    seq = [int(x) for x in np.random.default_rng(4).integers(0, 256, 230)]
    runner.reset()
    short = runner.extend(seq[:40])
    assert runner.reusable_length == 40
    runner.reset()
    assert bool((runner.extend(seq)[:40] == short).all())
    for p in (8, 30, 60, 185, 190):  # within the first 64 keys, and just before 192
        runner.reset()
        runner.extend(seq[:p])
        steps = np.stack([runner.extend([t], last_only=True)[0] for t in seq[p : p + 9]])
        runner.crop(p)
        assert runner.exact_rows(9) == 9
        assert bool((runner.extend(seq[p : p + 9]) == steps).all()), p


@pytest.mark.parametrize("kernels", list(KERNELS))
@pytest.mark.parametrize("name", EXACT)
def test_a_step_equals_its_row_in_any_run_and_in_a_cold_prefill(
    name: str, kernels: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(name, kernels, tmp_path, monkeypatch)
    assert runner.exact_steps
    single, rows, cold = _steps_and_rows(runner)
    for size, logits in rows.items():
        assert bool((logits == single).all()), f"{name}: {size}-row runs round apart"
    assert bool((cold == single).all()), f"{name}: steps round apart from a cold prefill"
    # the K/V the steps wrote are a cold prefill's too: what follows them is the same
    runner.reset()
    runner.extend(PROMPT, last_only=True)
    for i in IDS:
        runner.extend([i], last_only=True)
    after_steps = runner.extend([7, 9, 11])
    runner.reset()
    assert bool((runner.extend([*PROMPT, *IDS, 7, 9, 11])[-3:] == after_steps).all())


@pytest.mark.parametrize("name", RECURRENT)
def test_a_recurrent_step_rounds_apart_so_it_is_not_called_exact(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason, measured, on ONNX ops (the recurrent step against the chunked rule)."""
    runner = _runner(name, "ort", tmp_path, monkeypatch)
    assert not runner.exact_steps
    single, rows, _cold = _steps_and_rows(runner)
    assert not bool((rows[4] == single).all())


GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=24)
SHORT, LONG = "one two three four", " ".join(["one two three four"] * 24)  # < / > 64 tokens
GQA = {"HEARTH_ATTENTION_OP": "0"}  # GroupQueryAttention, not the kernel's HearthAttention
CASES = {  # file, paired_decode, prompt, whether the loop may speculate, environment
    "exact": ("qwen3", True, SHORT, True, {}),
    "not-exact": ("qwen3", False, SHORT, False, GQA),  # 1-token steps on MLAS's M == 1 kernel
    "unpaired-kernel": ("qwen3", False, SHORT, True, {}),  # HearthAttention needs no pairing
    "wide-short": ("gemma3-wide", True, SHORT, False, GQA),  # within exact_from
    "wide-long": ("gemma3-wide", True, LONG, True, GQA),
    "wide-short-kernel": ("gemma3-wide", True, SHORT, True, {}),  # no exact_from there
}


def _reply(engine: Engine, prompt: str, speculative: bool) -> list[int]:
    """A cold greedy reply's ids."""
    engine.runner.reset()
    engine.speculative = speculative
    request = GenerationRequest((Message("user", prompt),), GREEDY, "exact")
    done = list(engine.generate(request))[-1]
    assert isinstance(done, Finished)
    return list(done.token_ids)


@pytest.mark.parametrize("case", list(CASES))
def test_the_loop_speculates_only_where_steps_are_exact(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app asks for speculation on every model; the loop makes a prompt-lookup verifier
    only where the runner's steps are exact from the prompt's end on (``exact_steps``, and
    ``exact_from`` for wide heads). A hybrid's runner on ONNX ops is not exact by its
    DeltaNets (above); on the native ops it is (test_hybrid_speculation.py)."""
    name, paired, prompt, speculates, env = CASES[case]
    if case.endswith("-kernel") and not kernel_enabled():
        pytest.skip("the C kernel cannot be built here")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    made: list[object] = []

    def verifier(runner: object, *args: Any, **kwargs: Any) -> DraftVerifier:
        made.append(runner)
        return DraftVerifier(runner, *args, **kwargs)

    monkeypatch.setattr(generate, "DraftVerifier", verifier)
    path = tmp_path / f"{name}.gguf"
    if name == "gemma3-wide":
        write_tiny_model(path, "gemma3", QUANT, config=WIDE_GEMMA3)
    else:
        WRITERS[name](path)
    engine = Engine(path, speculative=True)
    try:
        runner: Any = engine.runner
        assert engine.info.backend == "onnx"
        runner.paired_decode = paired
        plain = _reply(engine, prompt, speculative=False)
        assert not made
        assert _reply(engine, prompt, speculative=True) == plain
    finally:
        engine.close()
    assert bool(made) == speculates
