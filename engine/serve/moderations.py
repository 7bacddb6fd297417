"""``POST /v1/moderations``: OpenAI's moderation endpoint over the server's safety review.

Owns the wire format: ``{"input": "text" | ["text", ...], "model": ...}`` in, OpenAI's
``{"id", "model", "results": [{"flagged", "categories", "category_scores"}]}`` out, one result
per input, each judged as a question by the blocklist and the guard
(`engine.safety.review.SafetyReview.check_question`). OpenAI's category keys are filled from
Qwen3Guard's categories where they mean the same (Violent -> violence, ...); scores are 1.0 for
a named category and 0.0 otherwise (the guard gives no probabilities). Each result also
carries Hearth's own ``"hearth"`` object with the verdict as the guard said it (Safe / Unsafe /
Controversial, its category names, the source). Does not own the review or the routing.
"""

from __future__ import annotations

import uuid
from typing import Any

from engine.safety.review import SafetyReview
from engine.serve.api_error import ApiError
from engine.types import SafetyVerdict

MAX_INPUTS = 32
MAX_CHARS = 32_000

# OpenAI's moderation categories, and which of Qwen3Guard's (or the blocklist) set each.
OPENAI_CATEGORIES: dict[str, tuple[str, ...]] = {
    "harassment": (),
    "harassment/threatening": (),
    "hate": (),
    "hate/threatening": (),
    "illicit": ("Non-violent Illegal Acts",),
    "illicit/violent": (),
    "self-harm": ("Suicide & Self-Harm",),
    "self-harm/intent": (),
    "self-harm/instructions": (),
    "sexual": ("Sexual Content or Sexual Acts",),
    "sexual/minors": (),
    "violence": ("Violent",),
    "violence/graphic": (),
}


def parse_inputs(body: object) -> list[str]:
    """The texts to judge; ApiError 400 naming what is wrong."""
    if not isinstance(body, dict) or "input" not in body:
        message = "the body needs an 'input': a string or a list of strings"
        raise ApiError(400, message, param="input")
    given = body["input"]
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "'input' must be a string or a list of strings", param="input")
    if not 1 <= len(texts) <= MAX_INPUTS:
        raise ApiError(400, f"'input' must hold 1 to {MAX_INPUTS} texts", param="input")
    if any(len(t) > MAX_CHARS for t in texts):
        raise ApiError(400, f"each input must be at most {MAX_CHARS:,} characters", param="input")
    return texts


def moderate(review: SafetyReview, texts: list[str], model: str) -> dict[str, Any]:
    """The response body (call on the engine thread: a local guard runs there)."""
    results = [result(review.check_question(text), review.flags) for text in texts]
    return {"id": f"modr-{uuid.uuid4().hex[:24]}", "model": model, "results": results}


def result(verdict: SafetyVerdict, flags: Any) -> dict[str, Any]:
    flagged = bool(flags(verdict))
    named = set(verdict.categories) if flagged else set()
    categories = {key: bool(named & set(ours)) for key, ours in OPENAI_CATEGORIES.items()}
    return {
        "flagged": flagged,
        "categories": categories,
        "category_scores": {key: float(hit) for key, hit in categories.items()},
        "hearth": verdict.to_dict(),
    }
