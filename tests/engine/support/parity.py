"""Test helper: the fast path against a transformers float32 reference, one way for every file.

`assert_matches_reference` is the check each architecture's parity test makes on the exact
(float-activation, ``accuracy=0``) graph: the prompt's logits within 2e-4 of their range, then
the same 32 greedy ids. The pieces (`reference_logits`, `greedy`, `hf_step`) serve tests that
check something else on the way (cache reuse, int8 activations).
"""

from __future__ import annotations

from typing import Any

import torch

PROMPT = [1, 17, 230, 4051, 99, 12, 7, 811, 3, 45, 600, 2048]
WINDOW = 512


def reference_logits(model: Any, ids: list[int]) -> torch.Tensor:
    """The reference model's logits for every position of ``ids``, (T, V) float32."""
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0].float()


def greedy(step: Any, prompt: list[int], n: int) -> list[int]:
    """n greedy ids; ``step(ids)`` returns the logits row after feeding ``ids``."""
    out: list[int] = []
    logits = step(prompt)
    for _ in range(n):
        out.append(int(logits.argmax()))
        logits = step([out[-1]])
    return out


def hf_step(model: Any) -> Any:
    """A `greedy` step over the reference: recomputes the whole history, the head on its
    last row only (most of the cost of a tiny model is the head)."""
    history: list[int] = []

    def step(ids: list[int]) -> torch.Tensor:
        history.extend(ids)
        with torch.inference_mode():
            return model(torch.tensor([history]), logits_to_keep=1).logits[0, -1].float()

    return step


def assert_close(got: torch.Tensor, expected: torch.Tensor) -> None:
    """Logits equal within 2e-4 of their largest magnitude (float32 summation order)."""
    got, expected = torch.as_tensor(got), torch.as_tensor(expected)  # Runners hand numpy
    scale = float(expected.abs().max())
    assert torch.allclose(got, expected, atol=2e-4 * scale, rtol=1e-3), (
        f"max |diff| {float((got - expected).abs().max()):.3g} of logits up to {scale:.3g}"
    )


def assert_matches_reference(runner: Any, reference: Any, prompt: list[int] = PROMPT) -> None:
    """The exact graph's prompt logits match ``reference``'s, and 32 greedy ids agree."""
    assert_close(runner.extend(prompt), reference_logits(reference, prompt))
    runner.reset()
    ids = greedy(lambda ids: runner.extend(ids, last_only=True)[0], prompt, 32)
    assert ids == greedy(hf_step(reference), prompt, 32)
