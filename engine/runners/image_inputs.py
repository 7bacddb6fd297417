"""A runner's image inputs: what an image changes in a graph run besides the token rows.

Owns, for one `engine.runners.onnx_runner.OnnxRunner` (one token sequence): the `ImageRows`
its image ids stand for and the check that an image's rows fit the graph (`add`); M-RoPE
(Qwen3.5, Qwen3-VL), the rotary rows of a run's indices rewritten in the runner's bound tables
from its tokens' (t, h, w) positions, against a plain copy of the tables; Gemma's both-ways
image block, its inputs for an image's run and the fixed ones every text run binds
(`text_block`); and Qwen3-VL's deepstack input, zeros for text and an image token's extra
rows. Does not own image ids, rows or positions themselves (`engine.runners.image_rows`), the
rotary tables (the runner computes and binds them), encoding images (`engine.vision`) or the
graph's image inputs (`engine.fastpath.image_block`, `engine.fastpath.graph`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.runners.image_rows import (
    ImageEmbedding,
    ImageRows,
    MRope,
    block_inputs,
    mrope_for,
    text_block_inputs,
)


class ImageInputs:
    """One runner's image state and the image inputs it binds per run."""

    def __init__(
        self,
        hparams: HParams,
        source: Path,
        inputs: dict[str, Any],
        rope_arrays: dict[str, np.ndarray],
    ) -> None:
        """``inputs``: the session's inputs by name; ``rope_arrays``: the runner's bound
        rotary tables by input name (M-RoPE writes their rows in place)."""
        self.hparams = hparams
        self.rows = ImageRows()  # image ids' rows (`engine.runners.image_rows`)
        self.block: dict[str, np.ndarray] | None = None  # Gemma: both-ways images
        self.deepstack = hparams.deepstack_layers * hparams.hidden  # Qwen3-VL
        if "image_block" in inputs:
            self.block = text_block_inputs()
        self._rope_arrays = rope_arrays
        self._mrope: MRope | None = mrope_for(hparams, source)
        self._rope_plain = {n: a.copy() for n, a in rope_arrays.items()} if self._mrope else {}

    def add(self, image: ImageEmbedding) -> None:
        """Make ``image``'s ids runnable, if its rows are as wide as the graph takes."""
        if image.rows.shape[1] != self.hparams.hidden + self.deepstack:
            raise ValueError(
                f"image rows are {image.rows.shape[1]} wide; the model takes "
                f"{self.hparams.hidden + self.deepstack}"
            )
        self.rows.add(image)

    def bind(
        self, binding: Any, cached: Sequence[int], ids: Sequence[int], total: int, image: bool
    ) -> None:
        """Bind a run's image inputs: ``ids`` after the ``cached`` ids, ``total`` tokens in
        all; ``image`` whether ``ids`` are one image's."""
        if self._mrope is not None and len(self.rows):  # once an image ran, rows may differ
            self._write_mrope(cached, ids)
        if self.block is not None:
            block = self._image_block(len(ids), total) if image else self.block
            for name, value in block.items():
                binding.bind_cpu_input(name, value)
        if self.deepstack:  # Qwen3-VL: zeros for text, an image token's extra rows
            deep = np.zeros((1, len(ids), self.deepstack), dtype=np.float32)
            if image:
                self.rows.fill_extra(ids, deep[0], self.hparams.hidden)
            binding.bind_cpu_input("deepstack", deep)

    def _write_mrope(self, cached: Sequence[int], ids: Sequence[int]) -> None:
        """M-RoPE: the rotary rows of this run's indices from its tokens' (t, h, w) positions."""
        assert self._mrope is not None
        start = len(cached)
        positions = self._mrope.positions(self.rows, ids, start + self.rows.position_shift(cached))
        for name, live in self._rope_arrays.items():
            self._mrope.write(live, self._rope_plain[name], start, positions)

    def _image_block(self, n: int, total: int) -> dict[str, np.ndarray]:
        """Gemma: the inputs of one image's run, causal mask off (`engine.fastpath.image_block`)."""
        return block_inputs(total - n, n, self.hparams.sliding_window)
