"""Tiny hand-built GGUF files with hostile headers, for the hardening tests (issue 22 A4, A7,
A11, A20). Each is a few hundred bytes written byte by byte: what a hostile file says is exactly
what the test wrote, with no library smoothing it over.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

U8, I32, U32, F32, BOOL, STR, ARR, U64 = 0, 5, 4, 6, 7, 8, 9, 10
F32_TENSOR = 0


def string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def scalar(vtype: int, value: Any) -> bytes:
    if vtype == STR:
        return struct.pack("<I", STR) + string(value)
    fmt = {U8: "B", I32: "i", U32: "I", F32: "f", BOOL: "?", U64: "Q"}[vtype]
    return struct.pack("<I", vtype) + struct.pack("<" + fmt, value)


def nested_arrays(depth: int) -> bytes:
    """An array of an array of ... (``depth`` levels) of no u32s."""
    head = struct.pack("<I", ARR) + struct.pack("<IQ", ARR, 1) * (depth - 1)
    return head + struct.pack("<IQ", U32, 0)


def string_array(items: list[str]) -> bytes:
    head = struct.pack("<I", ARR) + struct.pack("<IQ", STR, len(items))
    return head + b"".join(map(string, items))


def gguf_bytes(
    kvs: list[tuple[str, bytes]],
    tensors: list[tuple[str, list[int]]] | None = None,
    *,
    n_tensors: int | None = None,
    n_kv: int | None = None,
    alignment: int = 32,
) -> bytes:
    """A GGUF v3 file: ``kvs`` as (key, encoded type+value); F32 ``tensors`` as (name, dims in
    GGUF order), their data zeros. ``n_tensors``/``n_kv`` override the counts the header
    claims."""
    tensors = [("token_embd.weight", [8, 4])] if tensors is None else tensors
    out = bytearray(b"GGUF" + struct.pack("<I", 3))
    out += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, n_kv or len(kvs))
    for key, value in kvs:
        out += string(key) + value
    offset = 0
    sizes = []
    for name, dims in tensors:
        out += string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", F32_TENSOR, offset)
        n = 4
        for d in dims:
            n *= d
        sizes.append(n)
        offset += (n + alignment - 1) // alignment * alignment
    out += bytes(-len(out) % alignment)
    for n in sizes:
        out += bytes(n + (-n % alignment))
    return bytes(out)


def llama_kvs(**overrides: bytes) -> list[tuple[str, bytes]]:
    """The keys a llama header needs, with some replaced or added (``overrides``: key with
    dots written as double underscores -> encoded value)."""
    kvs = {
        "general.architecture": scalar(STR, "llama"),
        "general.name": scalar(STR, "hostile"),
        "llama.context_length": scalar(U32, 2048),
        "llama.block_count": scalar(U32, 1),
        "llama.embedding_length": scalar(U32, 8),
        "llama.attention.head_count": scalar(U32, 2),
    }
    for key, value in overrides.items():
        kvs[key.replace("__", ".")] = value
    return list(kvs.items())


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rewrite_gguf(
    source: Path,
    target: Path,
    *,
    keys: dict[str, Any] | None = None,
    tensors: dict[str, Any] | None = None,
    last: str | None = None,
) -> Path:
    """Copy the GGUF ``source`` to ``target`` with some metadata values replaced (``keys``:
    name -> value, of the same GGUF type) and some tensors' data replaced (``tensors``: name ->
    a function of gguf-py's data array returning the new one, e.g. one expert's slice, or None
    to drop the tensor); ``last`` moves that tensor to the end of the file (nothing mapped
    after it). Everything else is copied as it lies, so a test changes exactly one thing."""
    import gguf

    keys, tensors = keys or {}, tensors or {}
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(target, arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = gguf.GGUFValueType(field.types[0])
        sub = gguf.GGUFValueType(field.types[-1]) if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, keys.get(key, field.contents()), vtype, sub_type=sub)
    order = sorted(reader.tensors, key=lambda t: t.name == last)
    for t in order:
        data = np.array(t.data)
        if t.name in tensors:
            data = tensors[t.name](data)
            if data is None:
                continue
        writer.add_tensor(t.name, np.ascontiguousarray(data), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target
