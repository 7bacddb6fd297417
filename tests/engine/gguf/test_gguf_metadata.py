"""The one-pass GGUF reader (`engine.gguf.reader`) and the torch config built from it.

- It reads what gguf-py's `GGUFReader` reads (every key's contents and types, every tensor's
  name, GGUF-order shape, type, offset, size and data), on the bundled model and tiny models.
- Hostile headers (counts and lengths past the end of the file, unknown types, duplicates,
  too many dimensions, bad alignment) are a CorruptModelError at once, never an allocation or a
  loop sized by the header.
- `torch_config` equals transformers' own GGUF reading with `config_overrides` applied (what
  the header cache wrote until format 3), for every architecture both know.
"""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

from engine.errors import CorruptModelError
from engine.gguf.reader import SkippedStrings, open_gguf
from tests.engine.support.tokenizer_fixture import bundled_gguf


def assert_reads_as_gguf_py(path: Path) -> None:
    ours, theirs = open_gguf(path), gguf.GGUFReader(path)
    keys = [k for k in theirs.fields if not k.startswith("GGUF.")]
    assert list(ours.fields) == keys
    for key in keys:
        assert ours.fields[key].contents() == theirs.fields[key].contents(), key
        assert list(ours.fields[key].types) == [int(t) for t in theirs.fields[key].types], key
    assert ours.data_offset == theirs.data_offset
    assert len(ours.tensors) == len(theirs.tensors)
    for a, b in zip(ours.tensors, theirs.tensors, strict=True):
        assert (a.name, a.tensor_type, a.n_elements, a.n_bytes, a.data_offset) == (
            b.name,
            b.tensor_type,
            b.n_elements,
            b.n_bytes,
            b.data_offset,
        )
        assert a.shape.tolist() == b.shape.tolist()
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
        assert np.array_equal(a.data, b.data), a.name


def test_reads_the_bundled_model_as_gguf_py_does() -> None:
    assert_reads_as_gguf_py(bundled_gguf())


def test_reads_a_tiny_model_as_gguf_py_does(tmp_path: Path) -> None:
    from bench.synth.core import write_tiny_model

    path = tmp_path / "tiny.gguf"
    write_tiny_model(path, "qwen2", {"*ffn_down*": "F16", "*": "Q8_0"})
    assert_reads_as_gguf_py(path)


def _header(n_tensors: int, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def _string(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _string(key) + struct.pack("<I", vtype) + payload


ARCH = _kv("general.architecture", 8, _string("llama"))
HOSTILE = {
    "kv count past the end": _header(0, 10**15),
    "tensor count past the end": _header(10**15, 1) + ARCH,
    "string longer than the file": _header(0, 1) + struct.pack("<Q", 2**62) + b"key",
    "array count past the end": _header(0, 1)
    + _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 10**12)),
    "numeric array past the end": _header(0, 1) + _kv("x.scores", 9, struct.pack("<IQ", 6, 10**9)),
    "unknown value type": _header(0, 1) + _kv("x", 77, b"\0" * 8),
    "array of arrays": _header(0, 1) + _kv("x", 9, struct.pack("<IQ", 9, 1)),
    "duplicate key": _header(0, 2) + ARCH + ARCH,
    "truncated in the vocabulary": _header(0, 1)
    + _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + _string("a") + _string("b")),
    "too many dimensions": _header(1, 1) + ARCH + _string("t") + struct.pack("<I", 99) + b"\0" * 64,
    "unknown tensor type": _header(1, 1)
    + ARCH
    + _string("t")
    + struct.pack("<IQIQ", 1, 32, 9999, 0)
    + b"\0" * 64,
    "tensor data past the end": _header(1, 1)
    + ARCH
    + _string("t")
    + struct.pack("<IQIQ", 1, 32, 0, 0)
    + b"\0" * 8,
    "alignment not a power of two": _header(0, 2)
    + ARCH
    + _kv("general.alignment", 4, struct.pack("<I", 24)),
    "unsupported version": b"GGUF" + struct.pack("<IQQ", 99, 0, 0),
    "not a GGUF": b"PK\x03\x04" + b"\0" * 60,
}


@pytest.mark.parametrize("string_arrays", [True, False])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_headers_are_corrupt_model_errors(
    tmp_path: Path, case: str, string_arrays: bool
) -> None:
    path = tmp_path / "hostile.gguf"
    path.write_bytes(HOSTILE[case])
    with pytest.raises(CorruptModelError):
        open_gguf(path, string_arrays=string_arrays)


def test_string_arrays_can_be_stepped_over() -> None:
    full, shape_only = open_gguf(bundled_gguf()), open_gguf(bundled_gguf(), string_arrays=False)
    for key, field in full.fields.items():
        other = shape_only.fields[key].value
        if isinstance(field.value, list):
            assert isinstance(other, SkippedStrings) and len(other) == len(field.value), key
        elif isinstance(field.value, np.ndarray):
            assert np.array_equal(other, field.value), key
        else:
            assert other == field.value, key
    assert [t.data_offset for t in shape_only.tensors] == [t.data_offset for t in full.tensors]


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"])
def test_torch_config_equals_transformers_reading_with_the_overrides(
    tmp_path: Path, arch: str
) -> None:
    from transformers import AutoConfig

    from bench.synth.core import write_tiny_model
    from engine.arch.hf_config import config_overrides, torch_config
    from engine.arch.hparams import read_hparams

    path = tmp_path / f"tiny-{arch}.gguf"
    write_tiny_model(path, arch, "Q8_0")
    plain = AutoConfig.from_pretrained(tmp_path, gguf_file=path.name)
    reader = open_gguf(path)
    hp = read_hparams(reader)
    expected = type(plain).from_dict({**plain.to_dict(), **config_overrides(hp)}).to_dict()
    built = torch_config(reader.metadata, {t.name for t in reader.tensors}, hp)
    assert built is not None
    ours = AutoConfig.for_model(**built).to_dict()
    skip = {"architectures", "_name_or_path", "transformers_version"}
    assert {k: v for k, v in ours.items() if k not in skip} == {
        k: v for k, v in expected.items() if k not in skip
    }


def test_a_header_cache_leaves_no_parsed_file_for_the_cyclic_gc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parsed GGUF is a reference cycle (each tensor entry points back at its file); the
    header cache closes it, so its vocabulary's strings are freed at once, not at the cyclic
    GC's next run (a 151k vocabulary's ~45 MB were still there during a first open's session
    build). Checked with the cyclic GC off, as between two of its runs."""
    import gc

    from engine.gguf.reader import GgufFile
    from engine.header_cache import read_gguf_header

    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path))
    gc.collect()
    gc.disable()
    try:
        folder = read_gguf_header(bundled_gguf(), lambda _p: None)
        left = [o for o in gc.get_objects() if isinstance(o, GgufFile)]
    finally:
        gc.enable()
    assert (folder / "tokenizer.json").is_file()
    assert left == []
