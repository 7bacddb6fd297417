"""Images in a local generation: the model's vision projector and a request's images as rows.

Owns `find_mmproj` (an ``mmproj*.gguf`` beside the model: LM Studio's layout), `Vision` (an
opened mmproj checked against the language model: its family and projection width) and
`Vision.prepare`, which turns the images of a request's messages into the prompt's image ids
(`engine.text.ImageTokens`) and hands their rows to the runner (`add_image`, see
`engine.runners.image_rows`), encoding each image at most once (`engine.vision`'s cache).
The ids are keyed on the image's sha256, the projector file and the budget, so prefix reuse
and a chat's saved KV cache cover an image's tokens: a reopened image chat needs no prefill.
Does not own encoding (`engine.vision`), where ids go in the prompt (`engine.text`) or the
runner's image arithmetic.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import InvalidImageError, UnsupportedModelError
from engine.hub.library import projector_for
from engine.runners.image_rows import ImageEmbedding, image_ids, image_key
from engine.text import ImageTokens
from engine.types import ImageRef, Message
from engine.vision.cache import EmbeddingCache
from engine.vision.encode import ImageEncoder, vision_cache_dir
from engine.vision.mmproj import check_pairing
from engine.vision.preprocess import GEMMA4_BUDGETS, target_size

NO_PROJECTOR = "this model has no vision projector — download its mmproj"
TYPICAL_IMAGE = (768, 1024)  # (height, width) of the image `Vision.typical_tokens` prices


def find_mmproj(model: Path) -> Path | None:
    """The projector the models list pairs with ``model`` (`engine.hub.library.projector_for`:
    by name and width in its folder, where Hearth keeps many models' projectors, or Ollama's
    projector layer); else an ``mmproj*.gguf`` in its folder (the first by name), or None."""
    paired = projector_for(model)
    if paired is not None:
        return paired
    found = sorted(
        p for p in model.parent.glob("*.gguf") if p.name.lower().startswith("mmproj") and p != model
    )
    return found[0] if found else None


@dataclass(frozen=True)
class ImageReport:
    """What a request's images cost: tokens in the prompt, encode seconds, cache hits."""

    tokens: int = 0
    encode_s: float = 0.0
    cache_hits: int = 0


class Vision:
    """An mmproj opened for one language model (refused in one line when it does not fit)."""

    def __init__(
        self, mmproj: Path | str, arch: str, width: int, cache: bool = True, deepstack: int = 0
    ) -> None:
        self.encoder = ImageEncoder(mmproj, EmbeddingCache(vision_cache_dir() if cache else None))
        check_pairing(self.encoder.mmproj, arch, width, deepstack)
        self.projector = self.encoder.mmproj.projector
        self.path = Path(mmproj)

    @property
    def budgets(self) -> tuple[int, ...]:
        """The image-token budgets offered (the default first), () when there is no choice."""
        # Gemma 4's choices; none given, libmtmd's default token range for the type applies.
        return tuple(GEMMA4_BUDGETS) if self.projector.name == "gemma4v" else ()

    def typical_tokens(self) -> int:
        """A 1024 x 768 picture's tokens at the default budget (the app's "≈ N tokens")."""
        return self.encoder.count_tokens(TYPICAL_IMAGE[1], TYPICAL_IMAGE[0])

    def prompt_tokens(self, ref: ImageRef, tokenize: Callable[[str], list[int]]) -> int:
        """The prompt tokens ``ref`` takes (begin text, image tokens, end text), from its size
        alone (no encode): what the context meter counts before sending."""
        h, w = _oriented_size(_read(ref))
        n = self.encoder.count_tokens(w, h, ref.budget)
        return (
            len(tokenize(self.projector.image_begin)) + n + len(tokenize(self.projector.image_end))
        )

    def prepare(
        self, messages: Sequence[Message], runner: Any
    ) -> tuple[dict[tuple[str, int | None], ImageTokens], ImageReport]:
        """The image ids of ``messages``' images, their rows given to ``runner``."""
        add = getattr(runner, "add_image", None)
        if add is None:
            raise UnsupportedModelError(
                f"the {runner.backend} path cannot read images; images need the fast path "
                "(a .gguf model on the CPU)"
            )
        table: dict[tuple[str, int | None], ImageTokens] = {}
        tokens, seconds, hits = 0, 0.0, 0
        for ref in (r for m in messages for r in m.images):
            where = (ref.sha256 or ref.path, ref.budget)
            if where in table:
                continue
            data = _read(ref)
            encoded = self.encoder.encode(data, ref.budget)
            grid = self._grid(data, ref.budget, encoded.n_tokens)
            salt = f"{self.encoder.identity}:{ref.budget}"
            key = image_key(ref.sha256 or hashlib.sha256(data).hexdigest(), salt)
            add(ImageEmbedding(key, encoded.rows, grid))
            table[where] = ImageTokens(
                tuple(image_ids(key, encoded.n_tokens)),
                self.projector.image_begin,
                self.projector.image_end,
            )
            tokens += encoded.n_tokens
            seconds += encoded.seconds
            hits += encoded.cache_hit is not None
        return table, ImageReport(tokens, seconds, hits)

    def _grid(self, data: bytes, budget: int | None, n: int) -> tuple[int, int]:
        """The image's tokens as (rows, cols): M-RoPE positions them in 2-D (Qwen); Gemma's
        run in a line (one row)."""
        if not self.projector.name.startswith("qwen"):
            return (1, n)
        params = self.encoder.mmproj.params
        h, w = _oriented_size(data)
        rows, cols = target_size(h, w, params, self.projector, budget)
        step = params.patch * params.merge
        grid = (rows // step, cols // step)
        if grid[0] * grid[1] != n:
            raise InvalidImageError(f"the image's {n} tokens do not fill its {grid} grid")
        return grid


def _read(ref: ImageRef) -> bytes:
    try:
        return Path(ref.path).read_bytes()
    except OSError as e:
        raise InvalidImageError(
            f"{Path(ref.path).name} cannot be read: {e.strerror or e}"
        ) from None


def _oriented_size(data: bytes) -> tuple[int, int]:
    """(height, width) as shown: EXIF orientations 5-8 swap the sides (as the decoder does)."""
    from PIL import Image  # Pillow only when an image is read

    with Image.open(io.BytesIO(data)) as img:
        w, h = img.size
        orientation = img.getexif().get(274, 1)
    return (w, h) if orientation in (5, 6, 7, 8) else (h, w)
