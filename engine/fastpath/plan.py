"""The kernel plan: which of a file's matrices run on the kernel ops, decided from its table.

Owns the policies, in one place: the dense MLPs on the one-expert op (`dense_kernel_runs`,
``HEARTH_DENSE_KERNEL``/``_MIN_BYTES``), the attention projections and the head on
``HearthMatMul`` (`matrices_on`), every matrix on it in a file past the last-level cache
(`every_matrix_on`, ``HEARTH_MATRIX_KERNEL``/``HEARTH_KERNEL_MIN_BYTES``), and what the mapped
matrices then cost (`mapped_dense_bytes`, `mapped_matrix_bytes`: the memory and disk
estimates). Does not own the ops or the graph nodes (`engine.fastpath.dense_op`,
`.matmul_op`, `.expert_op`) or the kernel (`engine.kernels`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from engine import settings
from engine.fastpath.expert_op import file_expert_bytes, kernel_runs
from engine.gguf.header import summary_of
from engine.kernels import native
from engine.kernels.experts import supported

# Architectures whose `engine.fastpath.graph._mlp` is act(gate)·up → down and nothing else
# (gemma4 and the MoE/hybrid files have more around it and stay on MatMulNBits).
ARCHS = frozenset({"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3", "granite"})
MIN_BYTES = 2 << 30  # files below this keep MatMulNBits (HEARTH_DENSE_KERNEL_MIN_BYTES)
_FFN = re.compile(r"blk\.\d+\.ffn_(gate|up|down)\.weight")


def is_ffn_matrix(name: str) -> bool:
    """``blk.N.ffn_gate|up|down.weight``: a dense MLP's matrix (not an expert's)."""
    return _FFN.fullmatch(name) is not None


def min_bytes() -> int:
    """The smallest file whose MLPs run on the op (``HEARTH_DENSE_KERNEL_MIN_BYTES``)."""
    forced = settings.DENSE_KERNEL_MIN_BYTES.count()
    return forced if forced is not None else MIN_BYTES


def dense_kernel_runs(file_bytes: int, arch: str, types: Iterable[int]) -> bool:
    """Whether a ``file_bytes`` file of ``arch`` whose FFN matrices have these ggml ``types``
    runs its MLPs on the op. ``HEARTH_DENSE_KERNEL=0`` turns it off, ``=1`` on at any size
    (still only where the kernel runs every type)."""
    forced = settings.DENSE_KERNEL.raw()
    kinds = list(types)
    if forced == "0" or arch not in ARCHS or not kinds:
        return False
    if forced != "1" and (file_bytes < min_bytes() or every_matrix_on(file_bytes)):
        # Where the native ops serve, an MLP runs as two `HearthMatMul` nodes (gate|up, then
        # down) instead: a 7B's decode step 240 -> 175 ms, a Qwen3-0.6B's 67 -> 26 ms (this
        # op's one-expert path threads and buffers poorly; MatMulNBits: 33 ms).
        return False
    return kernel_runs(kinds)


def mapped_dense_bytes(file_bytes: int, arch: str, tensors: Iterable[tuple[str, int, int]]) -> int:
    """Bytes of the (name, ggml type, bytes) FFN matrices that stay mapped in the GGUF when
    the op runs the MLPs (their file size); 0 when they are repacked for MatMulNBits."""
    ffn = [(t, n) for name, t, n in tensors if is_ffn_matrix(name)]
    if not dense_kernel_runs(file_bytes, arch, (t for t, _ in ffn)):
        return 0
    return sum(n for _, n in ffn)


def file_dense_bytes(path: Path) -> int:
    """`mapped_dense_bytes` of a GGUF file, from its tensor table (no weights read)."""
    s = summary_of(path)
    tensors = [(t.name, t.ggml_type, t.nbytes) for t in s.tensors]
    return mapped_dense_bytes(s.data_end, s.architecture, tensors)


_PROJECTION = re.compile(r"blk\.\d+\.attn_(q|k|v|qkv|output)\.weight|output\.weight")
# Every matrix the graph reads through `GraphBuilder.projection`, where all of them run on
# the kernel (`every_matrix_on`): the attention's (a DeltaNet layer's fused qkv, z gate,
# decay and beta inputs and output too: the two gates with float activations), the dense
# and shared-expert MLPs', Gemma 4's per-layer input projections, the head. Not routers (a
# few rows) or experts (their own op).
_EVERY = re.compile(
    r"blk\.\d+\.(attn_(q|k|v|qkv|output|gate)|ffn_(gate|up|down)(_shexp)?|ssm_(alpha|beta|out)"
    r"|inp_gate|proj)\.weight|(output|per_layer_model_proj)\.weight"
)


# The hybrid files' DeltaNet layers project with their fused attn_qkv beside attn_gate and
# ssm_* (`engine.fastpath.deltanet`), which stay on MatMulNBits: there attn_qkv is not a
# projection of this op; their full-attention layers' attn_q/k/v/output are.
HYBRID = frozenset({"qwen35", "qwen35moe"})


def is_projection(name: str, tied_head: bool = False) -> bool:
    """An attention projection or the output head (``token_embd.weight`` when ``tied_head``:
    a model without ``output.weight`` projects with its embedding matrix)."""
    return _PROJECTION.fullmatch(name) is not None or (tied_head and name == "token_embd.weight")


def projection_names(
    tensors: Iterable[tuple[str, int]], on: bool, hybrid: bool = False, every: bool = False
) -> frozenset[str]:
    """The (name, ggml type) matrices that run on the op when ``on``: the attention
    projections and the head whose type the kernel decodes (a ``hybrid``'s DeltaNet
    attn_qkv is not among them); with ``every``, all the matrices of `_EVERY`."""
    if not on:
        return frozenset()
    listed = list(tensors)
    tied = not any(name == "output.weight" for name, _ in listed)

    def wanted(n: str) -> bool:
        if every:
            return _EVERY.fullmatch(n) is not None or (tied and n == "token_embd.weight")
        return is_projection(n, tied) and not (hybrid and n.endswith(".attn_qkv.weight"))

    return frozenset(n for n, t in listed if wanted(n) and supported(int(t)))


def every_matrix_on(file_bytes: int) -> bool:
    """Whether a ``file_bytes`` file runs all its matrices of `_EVERY` on this op (the MLPs
    too: the one-expert dense op is then not used, `engine.fastpath.dense_op`): where the
    native ops serve (no Python per call) and the file is too big for the CPU's last-level
    cache, where MatMulNBits' 8-bit codes would stay cached (`every_min_bytes`).
    ``HEARTH_MATRIX_KERNEL=0`` turns it off."""
    if settings.MATRIX_KERNEL.is_off():
        return False
    return file_bytes >= every_min_bytes() and native.serves()


EVERY_MIN_BYTES = 256 << 20  # the bundled 98 MB Q4_1 file: 8.1 ms a step on MatMulNBits,
#   16.4 on the kernel (its 576-wide rows are compute-bound); Qwen3.5-0.8B Q4_K_M (0.54 GB):
#   41.6 -> 31.5 ms, Q8_0 (0.83 GB): 87 -> 67 ms (AMD EPYC, 32 MB L3, 2 cores)


def every_min_bytes() -> int:
    """The smallest file `every_matrix_on` takes: ``HEARTH_KERNEL_MIN_BYTES``, else 256 MB or
    twice the last-level cache, whichever is more (a CPU with a huge cache keeps
    MatMulNBits' codes cached: a 0.5B there was faster on them)."""
    forced = settings.KERNEL_MIN_BYTES.count()
    return forced if forced is not None else max(EVERY_MIN_BYTES, 2 * _last_level_cache())


@cache
def _last_level_cache() -> int:
    """The largest CPU cache's bytes (Linux sysfs), or 32 MiB where unknown."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        best = max(best, int(digits) * scale if digits.isdigit() else 0)
    return best or 32 << 20


def matrix_names_for(
    arch: str,
    file_bytes: int,
    tensors: Iterable[tuple[str, int]],
    experts_mapped: bool,
    dense_mapped: bool,
) -> frozenset[str]:
    """The matrices of a file (its architecture, size and (name, ggml type) tensors) that run
    on the op, given whether its experts and its MLPs run on the kernel already."""
    # MoE files too: a qwen35moe's DeltaNet projections and shared experts otherwise stay on
    # MatMulNBits (17.8 of a 66 ms decode step). Its random-weight routing meets near-ties
    # that any change of 8-bit activations moves: perplexity +13.9% of llama.cpp's with every
    # matrix, +9.9% without, both int8 graphs equally far from the float one (cosine
    # 0.74-0.95 on the bench file), where llama.cpp in F32 equals it (make peer-test).
    every = every_matrix_on(file_bytes)
    on = every or matrices_on(arch, experts_mapped, dense_mapped)
    names = projection_names(tensors, on, arch in HYBRID, every)
    if dense_mapped:  # the MLPs are the dense op's
        names = frozenset(n for n in names if not is_ffn_matrix(n))
    return names


def matrices_on(arch: str, experts_mapped: bool, mlps_mapped: bool) -> bool:
    """Whether a file's projections run on the op: where its experts or its MLPs already do
    (the kernel is built; the file is big enough to pay, `engine.fastpath.dense_op`).
    ``HEARTH_MATRIX_KERNEL=0`` turns it off."""
    if settings.MATRIX_KERNEL.is_off():
        return False
    return experts_mapped or mlps_mapped


def file_matrix_names(path: Path) -> frozenset[str]:
    """`projection_names` of a GGUF file, from its tensor table (no weights read)."""
    s = summary_of(path)
    tensors = [(t.name, t.ggml_type) for t in s.tensors]
    return matrix_names_for(s.architecture, s.data_end, tensors, bool(file_expert_bytes(path)),
                            bool(file_dense_bytes(path)))  # fmt: skip


def mapped_matrix_bytes(tensors: Iterable[tuple[str, int]], names: frozenset[str]) -> int:
    """File bytes of the (name, bytes) ``names`` that the op maps, but for a tied head's
    ``token_embd.weight``, whose bytes the embedding rows already count."""
    return sum(n for name, n in tensors if name in names and name != "token_embd.weight")
