"""Conversation caches saved on disk (issue 21 item 2): a chat reopened by a new Engine (a
restart) prefills only its new tokens and answers as a cold run would; a file whose checksum,
format or key does not match is deleted and the chat simply prefills; the folder stays under
its budget, least recently used first; a hybrid model's recurrent state travels with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.synth.qwen35 import write_tiny_qwen35
from engine.engine import Engine
from engine.runners.kv_store import SUFFIX, KVStore, SavedState
from engine.types import Finished, GenerationRequest, Message, PromptPrepared, SamplingParams
from tests.engine.support.fast_runner import build_fast_runner

GREEDY = SamplingParams(temperature=0, repetition_penalty=1.0, max_new_tokens=12)
FIRST = (Message("user", "Name three colours."),)
BUDGET = 2**30


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_CHAT_CACHE_DIR", str(tmp_path / "cache" / "conversations"))
    return tmp_path / "cache" / "conversations"


def turn(engine: Engine, messages: tuple[Message, ...], conv: str) -> tuple[PromptPrepared, Any]:
    request = GenerationRequest(messages=messages, params=GREEDY, conversation_id=conv)
    events = list(engine.generate(request))
    assert isinstance(events[0], PromptPrepared) and isinstance(events[-1], Finished)
    return events[0], events[-1]


def test_a_reopened_chat_prefills_only_its_new_tokens(cache_dir: Path) -> None:
    first = Engine("bundled", saved_caches_bytes=BUDGET)
    _prep, done = turn(first, FIRST, "chat")
    second = (*FIRST, Message("assistant", done.text), Message("user", "Three more."))
    first.close()  # the app quits: the live cache is written
    assert len(list(cache_dir.glob(f"*{SUFFIX}"))) == 1

    again = Engine("bundled", saved_caches_bytes=BUDGET)  # a restart
    try:
        prep, reopened = turn(again, second, "chat")
        assert prep.restored_prompt_tokens == prep.cached_prompt_tokens > 20
        # The saved prefix: the first prompt and its reply as decoded (steps are exact:
        # `OnnxRunner.exact_steps`), all but the last sampled token, which never ran.
        assert prep.cached_prompt_tokens == done.stats.prompt_tokens + len(done.token_ids) - 1
        again.runner.reset()  # the same turn cold: the same reply (same answer every time)
        cold_prep, cold = turn(again, second, "cold")
        assert cold_prep.cached_prompt_tokens == cold_prep.restored_prompt_tokens == 0
        assert cold.token_ids == reopened.token_ids
    finally:
        again.close()


def test_a_damaged_or_foreign_file_is_deleted_and_the_chat_prefills(cache_dir: Path) -> None:
    # Nothing parked in memory: a chat left and reopened is read back from its file.
    engine = Engine("bundled", saved_caches_bytes=BUDGET, prefix_cache_size=0)
    try:
        turn(engine, FIRST, "chat")
        turn(engine, FIRST, "other")  # leaving "chat" writes it
        engine.save_caches()
        path = _store(engine).path_for("chat")
        assert path.is_file()
        data = bytearray(path.read_bytes())
        data[-5] ^= 0xFF  # one flipped bit in the K/V
        path.write_bytes(bytes(data))
        prep, _done = turn(engine, FIRST, "chat")
        assert prep.restored_prompt_tokens == 0
        assert not path.exists()

        store = _store(engine)
        store.save("x", SavedState([1, 2], [np.zeros((2, 3), np.float32)]))
        foreign = KVStore(store.folder, {**store.key, "template": "another"}, BUDGET)
        foreign_path = foreign.path_for("x")
        store.flush()
        store.path_for("x").rename(foreign_path)  # a file claiming another key's name
        assert foreign.load("x") is None and not foreign_path.exists()
    finally:
        engine.close()


def _store(engine: Engine) -> KVStore:
    store = engine._caches.store
    assert store is not None
    return store


def test_the_folder_stays_under_its_budget_least_recently_used_first(tmp_path: Path) -> None:
    state = SavedState([1, 2, 3], [np.arange(1000, dtype=np.float32)])  # 4,000 bytes
    store = KVStore(tmp_path, {"model": "m"}, budget_bytes=9_000)  # room for two files
    store.save("a", state)
    store.save("b", state)
    store.flush()
    assert store.load("a") is not None  # "a" is now the most recently used
    store.save("c", state)
    store.flush()
    assert store.path_for("a").exists() and store.path_for("c").exists()
    assert not store.path_for("b").exists()
    loaded = store.load("c")
    assert loaded is not None and loaded.ids == [1, 2, 3]
    assert np.array_equal(loaded.arrays[0], state.arrays[0])


def test_a_hybrid_models_recurrent_state_is_saved_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "qwen35.gguf"
    write_tiny_qwen35(path, "Q8_0")
    runner = build_fast_runner(path, window=256)
    assert runner is not None
    prompt = [1, 17, 230, 4051, 99, 12, 7, 811, 3, 45, 600, 2048] * 4
    runner.extend(prompt, last_only=True)
    runner.extend([5], last_only=True)
    store = KVStore(tmp_path / "kv", {"model": "q"}, BUDGET)
    store.save("c", runner.export_state())
    expected = runner.extend([9, 10], last_only=True)

    fresh = build_fast_runner(path, window=256)
    assert fresh is not None
    saved = store.load("c")
    assert saved is not None and saved.layout["state"] > 0
    fresh.import_state(saved)
    assert fresh.cached_ids == [*prompt, 5]
    assert bool((fresh.extend([9, 10], last_only=True) == expected).all())
    fresh.crop(len(prompt) - 3)  # back inside the prompt: a saved checkpoint is used
    assert fresh.cached_ids == prompt[:-3]
