"""What every run of an `engine.runners.onnx_runner.OnnxRunner` binds: rotary tables, K/V
buffers and the IO bindings over them.

Owns the cos/sin tables for a context window (bound once, as OrtValues), which layers keep K/V
buffers of their own and which share another's (gemma4), the buffers' element type (the
graph's: float16 where every layer attends with the kernel's op,
`engine.fastpath.attention_op`), allocating those buffers (keeping the cached tokens when they
grow, or reserving the whole window at once where pages are mapped as written), and building
an IO binding whose past and present K/V are the same buffer (a decode step appends in place)
and, for a hybrid, whose recurrent state reads one buffer set and writes the other. Does not
own when buffers grow, what a run binds besides (token rows, images:
`engine.runners.image_inputs`), or the recurrent state's buffers
(`engine.runners.recurrent`).
"""

from __future__ import annotations

import contextlib
import math
import mmap
import sys
from typing import Any

import numpy as np

from engine.arch.hparams import HParams, rope_tables
from engine.runners.recurrent import RecurrentState


def rope_values(
    ort: Any, session: Any, hp: HParams, window: int, arrays: dict[str, np.ndarray]
) -> dict[str, Any]:
    """The cos/sin inputs for ``window``, as OrtValues bound once; their arrays into
    ``arrays`` by input name."""
    names = {i.name for i in session.get_inputs()}
    values: dict[str, Any] = {}
    for suffix, local in (("", False), ("_local", True)):
        if f"cos_cache{suffix}" not in names:
            continue
        # one row past the window: a 1-token step's attention runs one position more
        cos, sin = rope_tables(hp, window + 1, local)
        arrays[f"cos_cache{suffix}"], arrays[f"sin_cache{suffix}"] = cos, sin
        values[f"cos_cache{suffix}"] = ort.OrtValue.ortvalue_from_numpy(cos)
        values[f"sin_cache{suffix}"] = ort.OrtValue.ortvalue_from_numpy(sin)
    return values


def kv_layout(hp: HParams, n_layers: int) -> tuple[list[int], dict[int, list[int]]]:
    """(the layers with K/V buffers of their own, {layer: the layers that read its K/V})."""
    kv_layers = [  # gemma4's KV-sharing layers write into their source's buffers
        i for i in range(n_layers) if not hp.is_recurrent(i) and hp.kv_source(i) == i
    ]
    sharers: dict[int, list[int]] = {}
    for i in range(n_layers):
        if not hp.is_recurrent(i) and hp.kv_source(i) != i:
            sharers.setdefault(hp.kv_source(i), []).append(i)
    return kv_layers, sharers


def kv_dtype(session: Any, kv_layers: list[int]) -> np.dtype[Any]:
    """The element type of ``session``'s K/V inputs (float32 where it has none)."""
    types = {i.name: i.type for i in session.get_inputs()}
    kind = types.get(f"past_key.{kv_layers[0]}") if kv_layers else None
    return np.dtype(np.float16 if kind == "tensor(float16)" else np.float32)


def reserved_zeros(shape: tuple[int, ...], dtype: np.dtype[Any] | type) -> np.ndarray | None:
    """A zero array whose memory the OS maps only as it is written (an anonymous private
    mapping, in 4 KiB pages so that a head's rows take what they use), or None where a mapping
    is committed whole (Windows) or the mapping fails.

    Why: growing the cache copies it into fresh memory, and a fresh page costs a fault. On the
    project's VM a Qwen3-30B-A3B shape's step at 2,048 tokens took 748 ms instead of 36 (200 MB
    faulted in during the copy); a reserved window faults a page per 16 tokens of a head as
    they are written, spread over the steps, and never copies."""
    size = math.prod(shape) * np.dtype(dtype).itemsize
    if sys.platform == "win32" or size == 0:
        return None
    try:
        memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, ValueError, OverflowError, AttributeError):  # AttributeError: no MAP_*
        return None
    with contextlib.suppress(AttributeError, OSError):  # Linux: a huge page per head would
        memory.madvise(mmap.MADV_NOHUGEPAGE)  # hold 2 MB of a few written rows
    return np.frombuffer(memory, dtype=dtype).reshape(shape)


def kv_buffers(
    hp: HParams,
    kv_layers: list[int],
    capacity: int,
    old: list[np.ndarray],
    n: int,
    dtype: np.dtype[Any] | type = np.float32,
    reserve: bool = False,
) -> list[np.ndarray]:
    """K and V buffers per layer of ``capacity`` tokens of ``dtype``, the first ``n`` copied
    from ``old``; ``reserve``: mapped as written (`reserved_zeros`) where the OS does so."""
    buffers = []
    for j in range(2 * len(kv_layers)):
        layer = kv_layers[j // 2]  # gemma4: heads and head size differ per layer
        shape = (1, hp.kv_heads_at(layer), capacity, hp.head_dim_at(layer))
        buf = reserved_zeros(shape, dtype) if reserve else None
        if buf is None:
            buf = np.zeros(shape, dtype=dtype)
        if old:
            buf[:, :, :n] = old[j][:, :, :n]
        buffers.append(buf)
    return buffers


def io_binding(
    session: Any,
    ort: Any,
    *,
    hidden: bool,
    rope: dict[str, Any],
    kv_layers: list[int],
    sharers: dict[int, list[int]],
    buffers: list[np.ndarray],
    state: RecurrentState | None,
    reads: int | None,
) -> Any:
    """A binding of ``session``'s outputs (logits first, ``hidden`` second), rotary tables
    and K/V (past and present the same buffer) and, where ``reads`` is a set, the recurrent
    state read from set ``reads`` and written to the other, its tail outputs last."""
    binding = session.io_binding()
    binding.bind_output("logits")  # first, so get_outputs()[0] is the logits
    if hidden:
        binding.bind_output("hidden")  # second
    for name, value in rope.items():
        binding.bind_ortvalue_input(name, value)
    for j, layer in enumerate(kv_layers):
        for k, kind in enumerate(("key", "value")):
            value = ort.OrtValue.ortvalue_from_numpy(buffers[2 * j + k])
            binding.bind_ortvalue_input(f"past_{kind}.{layer}", value)
            binding.bind_ortvalue_output(f"present_{kind}.{layer}", value)
            for sharer in sharers.get(layer, ()):  # rewrites the same K/V there
                binding.bind_ortvalue_output(f"present_{kind}.{sharer}", value)
    if state is not None and reads is not None:
        ortvalue = ort.OrtValue.ortvalue_from_numpy
        names = state.names()
        for (past, present), src, dst in zip(
            names, state.sets[reads], state.sets[1 - reads], strict=True
        ):
            binding.bind_ortvalue_input(past, ortvalue(src))
            binding.bind_ortvalue_output(present, ortvalue(dst))
        for tail in state.tail_names():  # last, in buffer order; ORT allocates them
            binding.bind_output(tail)
    return binding
