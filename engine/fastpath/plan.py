"""The kernel plan: which kernel runs each of a file's matrices, and why, from its table alone.

Owns `KernelPlan` — per tensor, ``HearthExperts`` (routed experts, and a large dense file's
MLPs as one expert), ``HearthMatMul`` (attention projections and the head beside them, or
every matrix in a file past the last-level cache) or ONNX Runtime's ``MatMulNBits`` over a
repacked copy, with the reason — and the rules it applies, in one place: `kernel_runs`
(``HEARTH_EXPERT_KERNEL``), `dense_kernel_runs` (``HEARTH_DENSE_KERNEL``/``_MIN_BYTES``),
`matrices_on` / `every_matrix_on` (``HEARTH_MATRIX_KERNEL``/``HEARTH_KERNEL_MIN_BYTES``),
`delta_op_on` (``HEARTH_DELTA_OP``), `is_graph_matrix` (what the repacking pipeline plans),
and what the mapped matrices then cost (the memory and disk estimates). The converted
graph's folder name, the conversion, the memory estimate and ``engine doctor`` all read one
plan. Does not own the ops or the graph nodes (`engine.fastpath.dense_op`, `.matmul_op`,
`.expert_op`, `.kernel_ops`) or the kernel (`engine.kernels`).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engine import settings
from engine.gguf.header import GgufSummary, summary_of
from engine.kernels import experts, native
from engine.kernels.experts import supported

ACCURACY_INT8 = 4  # as `engine.fastpath.builder.ACCURACY_INT8`: int8 activations
_EXTENSIONS = "onnxruntime_extensions"  # hosts the ops' Python form (`engine.fastpath.expert_op`)

# ------------------------------------------------------------------ routed experts


def kernel_enabled() -> bool:
    """Whether MoE graphs use the op here: not turned off (``HEARTH_EXPERT_KERNEL=0``),
    onnxruntime-extensions installed, and the C expert kernel built (`engine.kernels.build`,
    which compiles it on first use, once per machine)."""
    if settings.EXPERT_KERNEL.is_off():
        return False
    if importlib.util.find_spec(_EXTENSIONS) is None:
        return False
    try:
        from engine.kernels import build
    except ImportError:  # a tree without the C kernel: the If graph
        return False
    return build.available()


def kernel_runs(types: Iterable[int]) -> bool:
    """Whether a file whose expert matrices have these ggml ``types`` runs them with the op."""
    if not kernel_enabled():
        return False
    supports = getattr(experts, "supported", None)
    return supports is None or all(supports(int(t)) for t in types)


def is_expert_tensor(name: str) -> bool:
    """``blk.N.ffn_*_exps.*``: a routed expert's matrix, bias or scale (not the shared one)."""
    return "_exps." in name


def mapped_expert_bytes(tensors: Iterable[tuple[str, int, int]]) -> int:
    """Bytes of the (name, ggml type, bytes) tensors that stay mapped in the GGUF when the op
    runs the experts (their file size); 0 when the nested-``If`` graph repacks them."""
    routed = [(name, t, n) for name, t, n in tensors if is_expert_tensor(name)]
    matrices = [t for name, t, _ in routed if name.endswith(".weight")]
    if not matrices or not kernel_runs(matrices):
        return 0
    return sum(n for _, _, n in routed)


def file_expert_bytes(path: Path) -> int:
    """`mapped_expert_bytes` of a GGUF file, from its tensor table (no weights read)."""
    return KernelPlan.for_file(path).expert_bytes


# ------------------------------------------------------------------ dense MLPs

# Architectures whose the MLP of `engine.fastpath.graph` is act(gate)·up → down and nothing else
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


def dense_kernel_runs(
    file_bytes: int, arch: str, types: Iterable[int], head_bytes: int = 0
) -> bool:
    """Whether a ``file_bytes`` file of ``arch`` whose FFN matrices have these ggml ``types``
    (and whose head has ``head_bytes``) runs its MLPs on the op. ``HEARTH_DENSE_KERNEL=0``
    turns it off, ``=1`` on at any size (still only where the kernel runs every type)."""
    forced = settings.DENSE_KERNEL.raw()
    kinds = list(types)
    if forced == "0" or arch not in ARCHS or not kinds:
        return False
    if forced != "1" and (file_bytes < min_bytes() or every_matrix_on(file_bytes, head_bytes)):
        # Where the native ops serve, an MLP runs as two `HearthMatMul` nodes (gate|up, then
        # down) instead: a 7B's decode step 240 -> 175 ms, a Qwen3-0.6B's 67 -> 26 ms (this
        # op's one-expert path threads and buffers poorly; MatMulNBits: 33 ms).
        return False
    return kernel_runs(kinds)


def mapped_dense_bytes(file_bytes: int, arch: str, tensors: Iterable[tuple[str, int, int]]) -> int:
    """Bytes of the (name, ggml type, bytes) FFN matrices that stay mapped in the GGUF when
    the op runs the MLPs (their file size); 0 when they are repacked for MatMulNBits."""
    table = list(tensors)
    ffn = [(t, n) for name, t, n in table if is_ffn_matrix(name)]
    head = head_bytes((name, n) for name, _, n in table)
    if not dense_kernel_runs(file_bytes, arch, (t for t, _ in ffn), head):
        return 0
    return sum(n for _, n in ffn)


def file_dense_bytes(path: Path) -> int:
    """`mapped_dense_bytes` of a GGUF file, from its tensor table (no weights read)."""
    return KernelPlan.for_file(path).dense_bytes


# ------------------------------------------------------------------ projections, every matrix


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


def every_matrix_on(file_bytes: int, head_bytes: int = 0) -> bool:
    """Whether a ``file_bytes`` file whose head has ``head_bytes`` runs all its matrices of
    `_EVERY` on this op (the MLPs too: the one-expert dense op is then not used,
    `engine.fastpath.dense_op`): where the native ops serve (no Python per call) and the file
    is too big for the CPU's last-level cache, where MatMulNBits' 8-bit codes would stay
    cached (`every_min_bytes`), or its head is (`head_heavy`). ``HEARTH_MATRIX_KERNEL=0``
    turns it off."""
    if settings.MATRIX_KERNEL.is_off():
        return False
    big = file_bytes >= every_min_bytes() or head_heavy(file_bytes, head_bytes)
    return big and native.serves()


def head_heavy(file_bytes: int, head_bytes: int) -> bool:
    """A small model with a big vocabulary: its head is half the file or more and alone twice
    the last-level cache, so a step streams it from memory whatever runs the layers. Gemma 3
    270M Q4_K_M (253 MB, a 178 MB Q8_0 head of 262,144 rows) decoded at 58-61 tok/s idle on
    MatMulNBits, 69-71 on the kernel (paired), and 36 -> 55 beside a busy program (the
    governor runs only with the kernel); the bundled SmolLM2 (98 MB, a 30 MB head) is not
    head-heavy (it runs on the kernel by its size).
    Off where ``HEARTH_KERNEL_MIN_BYTES`` is set: that threshold alone rules."""
    if settings.KERNEL_MIN_BYTES.count() is not None:
        return False
    return 2 * head_bytes >= file_bytes and head_bytes >= 2 * _last_level_cache()


def head_bytes(tensors: Iterable[tuple[str, int]]) -> int:
    """Bytes of the (name, bytes) table's head: ``output.weight``, else the tied
    ``token_embd.weight``; 0 without either."""
    sizes = dict(tensors)
    return sizes.get("output.weight", sizes.get("token_embd.weight", 0))


EVERY_MIN_BYTES = 64 << 20  # the bundled 98 MB Q4_1 file: 12.7-14.6 ms a step on MatMulNBits,
#   8.6-9.2 on the kernel (session 14, after its Q4_1 dot stopped stalling on store
#   forwarding; 16.4 before, when this was 256 MB); Qwen3.5-0.8B Q4_K_M (0.54 GB):
#   41.6 -> 31.5 ms, Q8_0 (0.83 GB): 87 -> 67 ms (AMD EPYC, 32 MB L3, 2 cores)


def every_min_bytes() -> int:
    """The smallest file `every_matrix_on` takes: ``HEARTH_KERNEL_MIN_BYTES``, else 64 MB or
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
    head: int = 0,
) -> frozenset[str]:
    """The matrices of a file (its architecture, size and (name, ggml type) tensors, its
    head's bytes) that run on the op, given whether its experts and its MLPs run on the
    kernel already."""
    # MoE files too: a qwen35moe's DeltaNet projections and shared experts otherwise stay on
    # MatMulNBits (17.8 of a 66 ms decode step). Its random-weight routing meets near-ties
    # that any change of 8-bit activations moves: perplexity +13.9% of llama.cpp's with every
    # matrix, +9.9% without, both int8 graphs equally far from the float one (cosine
    # 0.74-0.95 on the bench file), where llama.cpp in F32 equals it (make peer-test).
    every = every_matrix_on(file_bytes, head)
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
    return KernelPlan.for_file(path).matrices


def mapped_matrix_bytes(tensors: Iterable[tuple[str, int]], names: frozenset[str]) -> int:
    """File bytes of the (name, bytes) ``names`` that the op maps, but for a tied head's
    ``token_embd.weight``, whose bytes the embedding rows already count."""
    return sum(n for name, n in tensors if name in names and name != "token_embd.weight")


# ------------------------------------------------------------------ DeltaNet steps, repacking


def delta_op_on(arch: str, accuracy: int) -> bool:
    """Whether a graph of ``arch`` at ``accuracy`` runs its DeltaNet decode steps as the
    native ``HearthDeltaNet`` (`engine.kernels.deltastep.h`): a hybrid's int8 graph where
    the native ops serve (``HEARTH_DELTA_OP=0`` turns it off). Float-reference graphs run on
    the Python op, which has no such op, so they keep the ONNX ops."""
    if settings.DELTA_OP.is_off() or arch not in HYBRID or accuracy == 0:
        return False
    return native.serves()


def attention_op_on(accuracy: int) -> bool:
    """Whether an int8 graph's text layers attend with the kernel's ``HearthAttention``
    (`engine.fastpath.attention_op`): where the kernel is on and its native ops serve
    (``HEARTH_ATTENTION_OP=0`` turns it off alone). Float-reference graphs run on the
    Python op, which has no such op."""
    if settings.ATTENTION_OP.is_off() or accuracy == 0 or not kernel_enabled():
        return False
    return native.serves()


# The matrices `engine.fastpath.graph` asks the repacking pipeline for, in file order;
# anything else is repacked on request.
_GRAPH_MATRIX = re.compile(
    r"blk\.\d+\.(attn_q|attn_k|attn_v|attn_qkv|attn_output|ffn_gate|ffn_up|ffn_down)\.weight"
    r"|output\.weight"
)


def is_graph_matrix(name: str) -> bool:
    """A matrix the graph builder asks for (the pipeline repacks these ahead)."""
    return _GRAPH_MATRIX.fullmatch(name) is not None


# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class KernelPlan:
    """Which kernel runs each matrix of one file, decided once from its tensor table."""

    arch: str
    file_bytes: int
    accuracy: int
    expert_bytes: int  # routed experts mapped for HearthExperts (0: repacked, If graph)
    dense_bytes: int  # dense MLP matrices mapped for the one-expert op (0: repacked)
    matrices: frozenset[str]  # matrices mapped for HearthMatMul
    every: bool  # every matrix of the graph on HearthMatMul, not only projections and head
    delta_op: bool  # DeltaNet decode steps as the native HearthDeltaNet op
    attention_op: bool  # text layers attend with the native HearthAttention op
    kv_half: bool  # ... over a float16 K/V cache (where every layer can: attention_op.cache_half)

    @classmethod
    def for_file(cls, path: Path, accuracy: int = ACCURACY_INT8) -> KernelPlan:
        """The plan of a GGUF file, from its header (parsed once per file version)."""
        return cls.for_summary(summary_of(path), accuracy)

    @classmethod
    def for_summary(cls, summary: GgufSummary, accuracy: int = ACCURACY_INT8) -> KernelPlan:
        table = [(t.name, t.ggml_type, t.nbytes) for t in summary.tensors]
        return cls.for_table(summary.architecture, summary.data_end, table, accuracy)

    @classmethod
    def for_table(
        cls,
        arch: str,
        file_bytes: int,
        tensors: Iterable[tuple[str, int, int]],
        accuracy: int = ACCURACY_INT8,
    ) -> KernelPlan:
        """The plan of a file of ``arch`` and ``file_bytes`` with these (name, ggml type,
        bytes) tensors."""
        table = list(tensors)
        expert = mapped_expert_bytes(table)
        dense = mapped_dense_bytes(file_bytes, arch, table)
        pairs = [(name, t) for name, t, _ in table]
        head = head_bytes((name, n) for name, _, n in table)
        names = matrix_names_for(arch, file_bytes, pairs, bool(expert), bool(dense), head)
        every = bool(names) and every_matrix_on(file_bytes, head)
        delta = delta_op_on(arch, accuracy)
        attention = attention_op_on(accuracy)
        half = attention and not settings.KV_HALF.is_off()
        return cls(arch, file_bytes, accuracy, expert, dense, names, every, delta, attention,
                   half)  # fmt: skip

    def kernel_for(self, name: str) -> tuple[str, str]:
        """(the op that runs tensor ``name``, why) — a matrix not mapped is repacked for
        MatMulNBits (or, for vectors and the embedding rows, read as they are)."""
        if self.expert_bytes and is_expert_tensor(name):
            return "HearthExperts", "routed experts on the C kernel, over the mapped file"
        if self.dense_bytes and is_ffn_matrix(name):
            return "HearthExperts", "a large dense file's MLP as one expert, over the mapped file"
        if name in self.matrices:
            if self.every:
                return "HearthMatMul", "every matrix: the file is past the CPU's last-level cache"
            return "HearthMatMul", "a projection or the head, beside experts or MLPs on the kernel"
        return "MatMulNBits", self.why_not()

    def why_not(self) -> str:
        """Why a matrix stays on MatMulNBits in this file."""
        if settings.EXPERT_KERNEL.is_off():
            return "the kernel is turned off (HEARTH_EXPERT_KERNEL=0)"
        if not kernel_enabled():
            return "the C kernel is not built here (or onnxruntime-extensions is missing)"
        if self.matrices:
            return "not a matrix the kernel op takes in this file"
        return "a small file: ONNX Runtime's kernels are quicker while its codes stay cached"

    def mapped(self, name: str) -> bool:
        """Whether tensor ``name`` stays in the mapped file instead of being repacked."""
        return self.kernel_for(name)[0] != "MatMulNBits" and name != "token_embd.weight"

    def mapped_bytes(self, tensors: Iterable[tuple[str, int]]) -> int:
        """File bytes of the (name, bytes) tensors the kernel ops map (a tied head's
        ``token_embd.weight`` excepted: the embedding rows already count it)."""
        return sum(n for name, n in tensors if self.mapped(name))

    def folder_tag(self) -> str:
        """The letters the converted graph's folder name carries for this plan."""
        tag = "x" if self.expert_bytes else ""  # MoE experts as one op over the file
        tag += "d" if self.dense_bytes else ""  # dense MLPs likewise (fastpath.dense_op)
        tag += "m" if self.matrices else ""  # projections and head (fastpath.matmul_op)
        tag += "M" if self.every else ""  # every matrix, not only the projections and head
        # DeltaNet layers on HearthDeltaNet / HearthDeltaRun ("n" was steps only, its prefill
        # the chunked ONNX rule: a new letter rebuilds only the hybrids' graphs)
        tag += "r" if self.delta_op else ""
        tag += "t" if self.attention_op else ""  # text layers on HearthAttention
        return tag + ("h" if self.kv_half else "")  # ... over a float16 K/V cache

    def describe(self) -> str:
        """One line for the status bar and ``engine doctor``."""
        parts = []
        if self.expert_bytes:
            parts.append("experts on the kernel")
        if self.dense_bytes:
            parts.append("MLPs on the kernel")
        if self.matrices:
            parts.append(f"{len(self.matrices)} matrices on HearthMatMul")
        if not parts:
            parts.append(f"MatMulNBits for every matrix ({self.why_not()})")
        if self.delta_op:
            parts.append("DeltaNet steps native")
        if self.attention_op:
            parts.append("attention native" + (", float16 K/V" if self.kv_half else ""))
        return ", ".join(parts)
