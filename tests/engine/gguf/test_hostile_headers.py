"""Hostile GGUF headers (issue 22 A4, A7): each is refused with a one-line reason by `inspect`,
and listed as unreadable (with the reason) by `models` and the library, the other models still
shown. Tiny files written byte by byte (`tests.engine.support.hostile_gguf`)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from engine.__main__ import main
from engine.errors import CorruptModelError
from engine.gguf.header import read_gguf_summary
from engine.gguf.reader import open_gguf
from engine.hub.library import list_models
from engine.hub.summary import summarize_file
from tests.engine.support.hostile_gguf import (
    F32,
    STR,
    U32,
    gguf_bytes,
    llama_kvs,
    nested_arrays,
    scalar,
    write,
)
from tests.engine.support.tiny_gguf import write_tiny_gguf

HOSTILE = {
    "nested-arrays": gguf_bytes(llama_kvs(**{"junk.nested": nested_arrays(5000)})),
    "zero-dimension": gguf_bytes(llama_kvs(), [("token_embd.weight", [8, 0])]),
    "alignment-half": gguf_bytes(llama_kvs(**{"general.alignment": scalar(F32, 0.5)})),
    "alignment-nan": gguf_bytes(llama_kvs(**{"general.alignment": scalar(F32, math.nan)})),
    "alignment-inf": gguf_bytes(llama_kvs(**{"general.alignment": scalar(F32, math.inf)})),
    "alignment-abc": gguf_bytes(llama_kvs(**{"general.alignment": scalar(STR, "abc")})),
    "context-nan": gguf_bytes(llama_kvs(**{"llama.context_length": scalar(F32, math.nan)})),
    "context-inf": gguf_bytes(llama_kvs(**{"llama.context_length": scalar(F32, math.inf)})),
    "heads-nan": gguf_bytes(llama_kvs(**{"llama.attention.head_count": scalar(F32, math.nan)})),
    "heads-inf": gguf_bytes(llama_kvs(**{"llama.attention.head_count": scalar(F32, math.inf)})),
}


@pytest.fixture(autouse=True)
def _folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_inspect_refuses_a_hostile_header_in_one_line(case: str, tmp_path: Path, capsys) -> None:
    path = write(tmp_path / f"{case}.gguf", HOSTILE[case])
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(CorruptModelError):
        summarize_file(path, use_cache=False)


def test_one_hostile_file_does_not_empty_the_list(tmp_path: Path, capsys) -> None:
    (tmp_path / "models").mkdir()
    write_tiny_gguf(tmp_path / "models" / "good.gguf")
    for case, data in HOSTILE.items():
        write(tmp_path / "models" / f"{case}.gguf", data)
    listed = {Path(m.path).stem: m for m in list_models(include_other_apps=False)}
    assert set(listed) == {"good", *HOSTILE}
    assert listed["good"].unreadable == "" and listed["good"].architecture == "llama"
    for case in HOSTILE:
        assert listed[case].unreadable, case
        assert not listed[case].fast_path
    assert main(["models", "--hearth-only"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and out.count("unreadable") == len(HOSTILE)


# --- A7: counts checked against the file before anything is allocated ---------------------


def _claims(n_tensors: int = 1, n_kv: int | None = None) -> bytes:
    kvs = llama_kvs()
    return gguf_bytes(kvs, n_tensors=n_tensors, n_kv=n_kv)


def test_a_million_tensors_in_a_small_file_is_refused_before_reading_them(tmp_path) -> None:
    """10^6 tensors claimed: the summary and the full read refuse from the counts alone (the
    old summary parser read 10^6 entries for 5-8 s; the loader reached 4.6 GB)."""
    path = write(tmp_path / "many.gguf", _claims(n_tensors=1_000_000) + bytes(4 * 2**20))
    with pytest.raises(CorruptModelError, match=r"implausible|tensor count"):
        read_gguf_summary(path)
    with pytest.raises(CorruptModelError, match=r"tensors|tensor count"):
        open_gguf(path)


def test_a_million_token_vocabulary_is_refused_before_decoding(tmp_path) -> None:
    """A 10^6-token vocabulary (1-byte tokens: 9 MB) is refused by the engine's reader from its
    count, before a list of a million strings is built."""
    n = 1_000_000
    tokens = struct.pack("<I", 9) + struct.pack("<IQ", STR, n) + (struct.pack("<Q", 1) + b"a") * n
    kvs = llama_kvs(**{"tokenizer.ggml.model": scalar(STR, "gpt2")})
    path = write(tmp_path / "vocab.gguf", gguf_bytes([*kvs, ("tokenizer.ggml.tokens", tokens)]))
    with pytest.raises(CorruptModelError, match=r"tokenizer\.ggml\.tokens"):
        open_gguf(path)


def test_a_real_header_still_reads(tmp_path) -> None:
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    assert read_gguf_summary(path).architecture == "llama"
    assert open_gguf(path).architecture == "llama"
    assert U32 == 4  # the hostile writer's type numbers are GGUF's


# --- A15: what a file says is printed without terminal escapes --------------------------------

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1A\x07"


def test_inspect_and_models_print_no_terminal_escapes(tmp_path: Path, capsys) -> None:
    data = gguf_bytes(llama_kvs(**{"general.name": scalar(STR, f"nice{ESCAPES}model")}))
    path = write(tmp_path / "models" / "escapes.gguf", data)
    bad = write(tmp_path / "models" / f"bad{ESCAPES[:9]}.gguf", HOSTILE["alignment-half"])
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nicemodel" in out.replace("red", "") and "\x1b" not in out and "\x07" not in out
    assert main(["models", "--hearth-only"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert main(["inspect", str(bad)]) == 2
    assert "\x1b" not in capsys.readouterr().err
