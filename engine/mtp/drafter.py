"""One-token drafts from Qwen3.5's MTP block, for the speculative verifier.

Owns `MtpDrafter`: given the reply so far, it runs the file's MTP block (`engine.mtp.block`)
on the model's residual stream at the last cached position and the token after it, and
proposes the argmax of its head as the token after that. `engine.speculative.DraftVerifier`
then runs [token, draft] in one 2-row forward and keeps the draft's row only if the loop
samples the draft; on a 2-row run the fast-path graph steps its DeltaNet layers per token
and keeps the state after the first row (`engine.runners.recurrent`, ``pair``), so a
rejection rolls the recurrent state back without recomputing anything, and the reply is
bit for bit the plain one (tests/engine/mtp/test_mtp_exact.py).

The block is one gated-attention decoder layer with its own KV cache: its entry j reads the
residual stream h_j (the runner's ``hidden_rows``) and the embedding of token j+1, at rotary
position j, as transformers' Qwen3-Next MTP (`torch.cat([embeds, hidden])`). Entries are made
only from verified tokens (a draft is proposed when no draft is pending, so every cached
token is verified), for every position, the prompt included (caught up at the first
proposal after a prefill, in chunks: one more layer's prefill, which the verifier's ledger
leaves out of the draft's cost, `take_setup_s`). Computed in numpy with the kernel's matmul over the
file's blocks (`engine.kernels.experts.matmul`); a draft may round any way: verification, not
the drafter, decides the reply. Whether the block's h_j is the stream before or after the
model's final norm differs between ports; this reads the stream before it (the ``hnorm``
normalises it anyway). Does not own the verification, the ledger that switches drafting off
where it does not pay (`engine.speculative`), or the runner.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.arch.hparams import HParams, attention_scale, rope_tables
from engine.mtp.block import MtpBlock, read_mtp_block

CATCH_UP_ROWS = 256  # entries per forward while catching up on a prompt (bounds the scores)
# The draft's head keeps the first token ids only: its full 248,320 x 1,024 head was ~0.3 of a
# plain step on the 0.8B shape (the block's other matrices ~0.03). Byte-level BPE numbers its
# tokens in merge order, roughly by frequency, so the first ids are the common ones (FR-Spec,
# 2025, trims a draft head by frequency for the same reason); a token past them is simply
# never drafted. Verification, not the drafter, decides the reply either way.
DRAFT_VOCAB = 32768
CATCH_UP_AFTER = 2  # more new entries than a verify makes: a prompt's, timed apart
_DRAFTERS: weakref.WeakKeyDictionary[Any, MtpDrafter | None] = weakref.WeakKeyDictionary()


def mtp_drafter(runner: Any) -> MtpDrafter | None:
    """The drafter of ``runner``'s model, made once per runner; None where its file has no MTP
    block, or its runner does not give the residual stream or exact 2-row verifies."""
    if runner in _DRAFTERS:
        return _DRAFTERS[runner]
    drafter = None
    if getattr(runner, "exact_pairs", False) and getattr(runner, "_hidden", False):
        from gguf import GGUFReader

        block = read_mtp_block(GGUFReader(str(runner.source)), runner.hparams, DRAFT_VOCAB)
        drafter = MtpDrafter(runner, block) if block is not None else None
    _DRAFTERS[runner] = drafter
    return drafter


def _rms(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float32, copy=False)
    scale = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return np.asarray(x * scale * weight, np.float32)


class MtpDrafter:
    """Proposes one token after the reply so far (see the module docstring)."""

    def __init__(self, runner: Any, block: MtpBlock) -> None:
        self.runner, self.block = runner, block
        hp: HParams = runner.hparams
        self.hp = hp
        self.seen: list[int] = []  # the context its entries were made from (ids 0..length)
        self.length = 0  # entries made: positions 0..length-1
        cap = 256
        self.keys = np.zeros((hp.n_kv_heads, cap, hp.head_dim), np.float32)
        self.values = np.zeros_like(self.keys)
        self.made = np.zeros(cap, bool)  # which positions' entries exist (see `__call__`)
        self.cos, self.sin = rope_tables(hp, runner.context_window + 2)
        self.drafts = 0
        self.setup_s = 0.0  # seconds spent catching up on prompts since `take_setup_s`

    def __call__(self, context: Sequence[int] | np.ndarray, budget: int) -> list[int]:
        """Up to one drafted id after ``context`` (which ends with the token the verifier is
        about to run; the runner holds the ones before). [] where it cannot draft."""
        cached = len(self.runner.cached_ids)
        rows = self.runner.hidden_rows
        if budget < 1 or len(context) != cached + 1 or rows is None or len(rows) < cached:
            return []
        kept = max(0, min(self.length, _common(self.seen, context) - 1))
        if cached < 1:
            return []
        # Rows below the runner's hidden_from belong to another cache (a parked conversation
        # restored without them): no entries there; attention skips what was not made.
        first = max(kept, min(getattr(self.runner, "hidden_from", 0), cached - 1))
        self.made[kept : self.made.shape[0]] = False
        logits, began = None, time.perf_counter()
        for start in range(first, cached, CATCH_UP_ROWS):
            end = min(cached, start + CATCH_UP_ROWS)
            tokens = [int(t) for t in context[start + 1 : end + 1]]
            logits = self._forward(start, rows[start:end], tokens, last=end == cached)
        self.seen, self.length = [int(t) for t in context], cached
        if cached - kept > CATCH_UP_AFTER:  # a prompt's entries: prefill work, not a draft's
            self.setup_s += time.perf_counter() - began
        if logits is None:
            return []
        self.drafts += 1
        return [int(np.argmax(logits))]

    def take_setup_s(self) -> float:
        """Seconds of catching up on prompts since the last call (the verifier's ledger leaves
        them out of a draft's cost)."""
        spent, self.setup_s = self.setup_s, 0.0
        return spent

    def _forward(
        self, start: int, hidden: np.ndarray, tokens: list[int], last: bool
    ) -> np.ndarray | None:
        """Entries start..start+n-1; the head's logits after the last row when ``last``."""
        hp, m, norms = self.hp, self.block.matrices, self.block.norms
        eps = hp.rms_eps
        embeds = self.runner.embed(tokens)
        fused = np.concatenate(
            [_rms(embeds, norms["enorm"], eps), _rms(hidden, norms["hnorm"], eps)], axis=1
        )
        x = m["eh_proj"](fused)  # (n, hidden)
        x = x + self._attention(start, _rms(x, norms["attn_norm"], eps))
        normed = _rms(x, norms["post_attention_norm"], eps)
        gate, up = m["ffn_gate"](normed), m["ffn_up"](normed)
        x = x + m["ffn_down"](gate / (1.0 + np.exp(-gate)) * up)
        if not last:
            return None
        return np.asarray(m["head"](_rms(x[-1:], norms["head_norm"], eps))[0], np.float32)

    def _attention(self, start: int, x: np.ndarray) -> np.ndarray:
        """Gated attention of rows at positions start.. over the cache and themselves."""
        hp, m, norms = self.hp, self.block.matrices, self.block.norms
        n, hd, heads, kv = len(x), hp.head_dim, hp.n_heads, hp.n_kv_heads
        qg = m["attn_q"](x).reshape(n, heads, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:]
        k = m["attn_k"](x).reshape(n, kv, hd)
        v = m["attn_v"](x).reshape(n, kv, hd)
        q = self._rope(_rms(q, norms["attn_q_norm"], hp.rms_eps), start)
        k = self._rope(_rms(k, norms["attn_k_norm"], hp.rms_eps), start)
        end = start + n
        self._room(end)
        self.keys[:, start:end] = k.transpose(1, 0, 2)
        self.values[:, start:end] = v.transpose(1, 0, 2)
        self.made[start:end] = True
        group = heads // kv
        keys = np.repeat(self.keys[:, :end], group, axis=0)  # (heads, end, hd)
        values = np.repeat(self.values[:, :end], group, axis=0)
        scores = np.einsum("nhd,hkd->hnk", q, keys) * attention_scale(hp)
        hidden = np.arange(end)[None, :] > (start + np.arange(n))[:, None]  # causal
        hidden |= ~self.made[None, :end]  # and never made
        scores[:, hidden] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        out = np.einsum("hnk,hkd->nhd", weights, values)
        out = out * (1.0 / (1.0 + np.exp(-gate)))
        return m["attn_output"](out.reshape(n, heads * hd).astype(np.float32))

    def _rope(self, x: np.ndarray, start: int) -> np.ndarray:
        """Neox rotation of the first rope_dim dims of x (n, heads, hd) at positions start.."""
        half = self.hp.rope_dim // 2
        cos = self.cos[start : start + len(x), None, :]
        sin = self.sin[start : start + len(x), None, :]
        a, b, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin, rest], axis=-1)

    def _room(self, end: int) -> None:
        cap = self.keys.shape[1]
        if end <= cap:
            return
        grown = max(end, 2 * cap)
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], grown, old.shape[2]), np.float32)
            new[:, :cap] = old
            setattr(self, name, new)
        made = np.zeros(grown, bool)
        made[:cap] = self.made
        self.made = made


def _common(a: Sequence[int], b: Sequence[int] | np.ndarray) -> int:
    """The length of a's and b's common prefix."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
