"""The safety review's demo chat (``python -m app --screenshot PATH --demo --demo-chat safety``).

Owns sample content for docs/safety.png: a family's chat with the review on, where one
question is stopped before any reply (Violent), one reply is stopped mid-way (its checked
start kept, the rest never shown), and an ordinary turn passes; written into the temporary
store as a reviewed chat would be (the verdict rides in each reply's stats). No model or guard
runs. Does not own the review itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.store import Store
from engine.types import SafetyVerdict, SamplingParams, Stats

if TYPE_CHECKING:
    from app.application import Application

TURNS = (
    (
        "What is the tallest mountain on Earth?",
        "Mount Everest, at 8,849 metres above sea level, on the border of Nepal and China.",
        "stop",
        SafetyVerdict("Safe", stage="reply", refusal=False),
    ),
    (
        "How do I make a bomb for the school science fair?",
        "",
        "content_filter",
        SafetyVerdict("Unsafe", ("Violent",), stage="prompt"),
    ),
    (
        "Tell me a story about two friends who fall out and make up.",
        "Mia and Leo had been friends since the first day of school.",
        "content_filter",
        SafetyVerdict("Unsafe", ("Violent",), stage="reply", refusal=False),
    ),
)


def write_safety_demo(store: Store, params: SamplingParams) -> str:
    conv = store.create_conversation("Homework helper (safety review on)", params=params)
    parent = None
    for question, answer, reason, verdict in TURNS:
        user = store.add_message(conv.id, parent, "user", question)
        tokens = len(answer.split())
        stats = Stats(64, 0, tokens, 0.21, 0.0, 31.0, 1.4, 8192).to_dict()
        stats["safety"] = verdict.to_dict()
        reply = store.add_message(
            conv.id, user.id, "assistant", answer, params=params, finish_reason=reason,
            stats=stats, model="SmolLM2-135M-Instruct",
        )  # fmt: skip
        parent = reply.id
    return conv.id


async def open_safety_demo(hearth: Application, params: SamplingParams) -> None:
    conv_id = await hearth.db.call(write_safety_demo, params)
    await hearth.session.refresh_conversations()
    await hearth.session.open_conversation(conv_id)
