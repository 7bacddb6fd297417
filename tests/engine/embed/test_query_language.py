"""The query instruction chosen by the question's language, and what the catalogue says.

A tiny random qwen3 GGUF runs on the fast path (no download). With per-language instructions
(BGE's model cards: the Chinese model's 为这个句子生成表示以用于检索相关文章：, the English
model's "Represent this sentence for searching relevant passages: ") a Chinese question must run
with the Chinese one and an English question with the English one, and the vector must be the
one that instruction gives. The shipped Qwen3-Embedding entry keeps one English instruction for
every language, as its model card advises; a file named as the catalogue's is read with it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from bench.synth.core import write_tiny_model
from engine.embed.embedder import QUERY_INSTRUCTION, TextEmbedder, load_embedder
from engine.hub.embedding import (
    embedding_model_for,
    load_embedding_models,
    query_instruction,
    uncovered_languages,
)

ZH = "为这个句子生成表示以用于检索相关文章："
EN = "Represent this sentence for searching relevant passages: "
TABLE = {"zh": ZH, "*": EN}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TextEmbedder]:
    """The tiny model, named as the catalogue's embedding model's file."""
    folder = tmp_path_factory.mktemp("embed-lang")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEARTH_CACHE_DIR", str(folder / "cache"))
        path = folder / load_embedding_models()[0].filename
        write_tiny_model(path, "qwen3", "Q8_0")
        yield load_embedder(str(path), backend="fast", max_tokens=64, batch_size=4)


def test_the_lookup_goes_tag_then_base_language_then_any() -> None:
    pairs = [("zh-Hant", "T"), ("zh", "Z"), ("*", "A")]
    assert query_instruction(pairs, "zh-Hant") == "T"
    assert query_instruction(pairs, "zh-Hans") == "Z"
    assert query_instruction(pairs, "fr") == "A"
    assert query_instruction([("en", "E")], "fr", fallback="F") == "F"


def test_a_catalogue_file_brings_its_instructions_and_languages(tiny: TextEmbedder) -> None:
    entry = load_embedding_models()[0]
    assert embedding_model_for(str(tiny.loaded.spec.path)) == entry
    assert embedding_model_for("/nowhere/other.gguf") is None
    assert tiny.languages == entry.languages and "zh" in tiny.languages
    # Qwen3-Embedding's card: instructions in English whatever the query's language
    assert tiny.query_instructions == {"*": QUERY_INSTRUCTION}
    assert tiny.instruction_for("这份合同什么时候到期？") == QUERY_INSTRUCTION


def test_each_question_runs_with_its_languages_instruction(tiny: TextEmbedder) -> None:
    chosen = TextEmbedder(tiny.loaded, tiny.body, max_tokens=64, query_instructions=TABLE)
    zh, en = "合同什么时候到期？", "When does the contract expire?"
    assert chosen.instruction_for(zh) == ZH
    assert chosen.instruction_for("合約什麼時候到期？") == ZH  # Traditional: the base language
    assert chosen.instruction_for(en) == EN
    ids = chosen.token_ids(zh, query=True)
    assert ids == chosen.token_ids(ZH + zh, query=False)
    assert chosen.token_ids(en, query=True) == chosen.token_ids(EN + en, query=False)
    # one batch of mixed languages: each row is the vector of its own instruction
    vectors = chosen.embed([zh, en], query=True)
    alone = chosen.embed([ZH + zh, EN + en], query=False)
    np.testing.assert_allclose(vectors, alone, atol=1e-5)
    wrong = chosen.embed([EN + zh], query=False)[0]
    assert float(vectors[0] @ wrong) < 0.9999  # the instruction changed the Chinese vector


def test_languages_a_model_does_not_list_are_named() -> None:
    listed = load_embedding_models()[0].languages
    assert uncovered_languages(["zh-Hans", "zh-Hant", "en"], listed) == []
    assert uncovered_languages(["en", "th", "zh-Hant", "sw"], listed) == ["th", "sw"]
    assert uncovered_languages(["ja"], ["en"]) == ["ja"]
