"""Pixels to the encoder's input, exactly as llama.cpp's libmtmd prepares them.

Owns, per projector type: the target size (Gemma 3: a fixed square; Gemma 4 and Qwen: libmtmd's
"smart resize" between a minimum and a maximum of pixels, each side a multiple of patch x
merge), libmtmd's resize (in the llama.cpp that llama-cpp-python 0.3.36 ships: Pillow's
BILINEAR filter for Gemma 3, BICUBIC for Gemma 4 and Qwen; so Pillow does it here), its
letterboxing
(the aspect ratio kept, the rest black, the image centred) and the normalisation
``(u8 / 255 - mean) / std``, all in float32 as libmtmd computes them. Also owns the token
budget: Gemma 4's 70 / 140 / 280 / 560 / 1,120 and Qwen's maximum tokens become libmtmd's
``image_min_tokens`` / ``image_max_tokens``.

Does not own decoding files (`engine.vision.image`) nor the encoders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.errors import InvalidParamsError
from engine.vision.projectors import Projector, VisionParams

F32 = np.float32
GEMMA4_BUDGETS = (70, 140, 280, 560, 1120)


@dataclass(frozen=True)
class Prepared:
    """One image ready for an encoder."""

    pixels: np.ndarray  # (H, W, 3) float32, normalised
    grid: tuple[int, int]  # patches (rows, cols)
    n_tokens: int


def token_limits(projector: Projector, budget: int | None) -> tuple[int, int]:
    """(min, max) image tokens for ``budget`` (None: libmtmd's defaults for the type)."""
    if projector.fixed_size:
        if budget is not None:
            raise InvalidParamsError(f"{projector.family} images have a fixed size; no budget")
        return 0, 0
    if budget is None:
        return projector.min_tokens, projector.max_tokens
    if projector.name == "gemma4v" and budget not in GEMMA4_BUDGETS:
        choices = ", ".join(map(str, GEMMA4_BUDGETS))
        raise InvalidParamsError(f"image budget must be one of {choices} for Gemma 4, got {budget}")
    if not projector.min_tokens <= budget <= 16384:
        raise InvalidParamsError(
            f"image budget must be in [{projector.min_tokens}, 16384] tokens, got {budget}"
        )
    return min(projector.min_tokens, budget), budget


def prepare(
    rgb: np.ndarray, p: VisionParams, projector: Projector, budget: int | None = None
) -> Prepared:
    """Resize, letterbox and normalise ``rgb`` ((H, W, 3) uint8) for ``p``'s encoder."""
    target = target_size(rgb.shape[0], rgb.shape[1], p, projector, budget)
    resized = resize_letterboxed(rgb, target, projector.resize)
    pixels = normalise(resized, p.mean, p.std)
    grid = (target[0] // p.patch, target[1] // p.patch)
    return Prepared(pixels, grid, n_tokens(p, grid))


def target_size(
    h: int, w: int, p: VisionParams, projector: Projector, budget: int | None = None
) -> tuple[int, int]:
    """The (rows, cols) in pixels an h x w image is resized (letterboxed) to."""
    if projector.fixed_size:
        token_limits(projector, budget)
        return p.image_size, p.image_size
    lo, hi = token_limits(projector, budget)
    align = p.patch * p.merge
    return smart_size(h, w, align, lo * align * align, hi * align * align)


def n_tokens(p: VisionParams, grid: tuple[int, int]) -> int:
    """Image tokens the encoder makes from a ``grid`` of patches (libmtmd's count)."""
    rows, cols = grid
    return (rows // p.merge) * (cols // p.merge)


def smart_size(h: int, w: int, align: int, min_px: int, max_px: int) -> tuple[int, int]:
    """libmtmd's size between ``min_px`` and ``max_px`` pixels, sides multiples of ``align``:
    round each side to ``align``; if too many pixels, scale down (floor); if too few, up (ceil).
    Float32 as libmtmd computes it (ties away from zero, like std::round)."""

    def rnd(x: float) -> int:
        return math.floor(float(F32(x) / F32(align)) + 0.5) * align

    h_bar, w_bar = max(align, rnd(h)), max(align, rnd(w))
    if h_bar * w_bar > max_px:
        beta = F32(math.sqrt(float(F32(h * w) / F32(max_px))))
        h_bar = max(align, math.floor(float(F32(F32(h) / beta) / F32(align))) * align)
        w_bar = max(align, math.floor(float(F32(F32(w) / beta) / F32(align))) * align)
    elif h_bar * w_bar < min_px:
        beta = F32(math.sqrt(float(F32(min_px) / F32(h * w))))
        h_bar = math.ceil(float(F32(F32(h) * beta) / F32(align))) * align
        w_bar = math.ceil(float(F32(F32(w) * beta) / F32(align))) * align
    return h_bar, w_bar


def resize_letterboxed(
    rgb: np.ndarray, target: tuple[int, int], method: str = "bilinear"
) -> np.ndarray:
    """``rgb`` scaled to fit ``target`` (rows, cols) keeping its aspect, centred on black."""
    h, w = rgb.shape[:2]
    th, tw = target
    if (h, w) == (th, tw):
        return rgb
    scale = min(F32(tw) / F32(w), F32(th) / F32(h))
    nw = min(math.ceil(float(F32(w) * scale)), tw)
    nh = min(math.ceil(float(F32(h) * scale)), th)
    inner = resize(rgb, nh, nw, method)
    out = np.zeros((th, tw, 3), np.uint8)
    y0, x0 = (th - nh) // 2, (tw - nw) // 2
    out[y0 : y0 + nh, x0 : x0 + nw] = inner
    return out


def resize(rgb: np.ndarray, th: int, tw: int, method: str) -> np.ndarray:
    """libmtmd's resize, which is Pillow's: bilinear (Gemma 3) or bicubic (Gemma 4, Qwen) with
    the filter widened by the scale when shrinking, 8-bit fixed point (llama.cpp ported
    Pillow's Resample.c; the bytes agree, checked against libmtmd)."""
    from PIL import Image

    flt = Image.Resampling.BICUBIC if method == "bicubic" else Image.Resampling.BILINEAR
    return np.asarray(Image.fromarray(rgb).resize((tw, th), flt))


def normalise(rgb: np.ndarray, mean: tuple[float, ...], std: tuple[float, ...]) -> np.ndarray:
    """(u8 / 255 - mean) / std per channel, in float32."""
    x = rgb.astype(F32) / F32(255.0)
    return ((x - np.asarray(mean, F32)) / np.asarray(std, F32)).astype(F32)
