"""The documents demo chat (``python -m app --screenshot PATH --demo --demo-chat documents``).

Owns sample content for docs/documents.png: a question about an attached guide (too long to send
whole, so the reply was given numbered passages) in a chat that also searches a collection, a
reply citing both as [1] [2] with its Sources fold open, and a second file waiting in the
composer with its exact fit line. Written into the
(temporary) store like a real chat; no model needed. Does not own the main demo (`app.demo`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.chat.attachments import Attachment
from app.store import Store
from app.store.attachments import save_attachments, save_sources
from app.store.collections import set_collections
from engine.types import SamplingParams, Stats

if TYPE_CHECKING:
    from app.application import Application

GUIDE = "tea-guide.pdf"
COLLECTION = "Tea library"  # a folder the chat searches (the Collections button)
QUESTION = "How hot should the water be for green tea, and for how long do I steep it?"
ANSWER = (
    "Use water at **75–80 °C**, not boiling, and steep for **2–3 minutes** [1]. Boiling water "
    "scalds the leaves and draws out bitter catechins, so let the kettle rest a minute first "
    "[2]. For a second infusion, add about 30 seconds [1]."
)
SOURCES: list[dict[str, Any]] = [
    {"n": 1, "file": GUIDE, "locator": "page 4 · Green tea",
     "text": "Green tea: water at 75–80 °C, 2–3 minutes for the first infusion; add 30 seconds "
             "for each further infusion.",
     "before": "Brewing by type\n\n", "after": "\n\nOolong: 90–95 °C, 3–5 minutes."},
    {"n": 2, "file": "brewing/bitterness.md", "locator": "Why tea turns bitter",
     "text": "Water that is too hot scalds delicate leaves and extracts catechins quickly, which "
             "taste bitter and astringent. Let boiled water rest for a minute or two.",
     "before": "Troubleshooting\n\n", "after": "\n\nOver-steeping has the same effect.",
     "path": "/home/me/Documents/Tea/brewing/bitterness.md", "collection": COLLECTION},
]  # fmt: skip
GUIDE_TEXT = "\n\n".join(str(s["before"]) + s["text"] + s["after"] for s in SOURCES[:1]) * 60
NOTES = Attachment("tasting-notes.md", "# Tasting notes\n\nSencha, 2nd infusion: sweeter.\n" * 30,
                   1_420, "text", 612)  # fmt: skip


def write_documents_demo(store: Store, params: SamplingParams) -> str:
    conv = store.create_conversation("Green tea, from the guide", params=params)
    user = store.add_message(conv.id, None, "user", QUESTION)
    guide = Attachment(GUIDE, GUIDE_TEXT, 1_268_311, "pdf", 18_412)
    save_attachments(store, user.id, [guide.to_dict()])
    reply = store.add_message(
        conv.id, user.id, "assistant", ANSWER, model="SmolLM2-135M-Instruct", params=params,
        finish_reason="stop",
        stats=Stats(prompt_tokens=1_204, completion_tokens=64, ttft_s=0.21,
                    decode_tokens_per_s=41.0, total_s=1.8, context_window=8192),
    )  # fmt: skip
    save_sources(store, reply.id, SOURCES)
    set_collections(store, conv.id, [COLLECTION])
    return conv.id


async def open_documents_demo(hearth: Application, params: SamplingParams) -> None:
    """Open the documents chat with its Sources fold open and a file waiting in the composer."""
    session = hearth.session
    conv_id = await hearth.db.call(write_documents_demo, params)
    await session.refresh_conversations()
    await session.open_conversation(conv_id)
    last = session.messages.rowCount() - 1
    session.messages.item(last).sources_open = True  # as after a click on "Sources (2)"
    session.messages.touch(last)
    session.documents.collections = [COLLECTION]  # as loaded with the chat (shown at once)
    session.documents.sig_collections_changed.emit([COLLECTION])
    session.documents.tray.add(NOTES)
    session.documents.tray.sig_fit_changed.emit(3_214, 8_192, True)
    session.sig_context_changed.emit(1_268, 8_192, 1_204)
    hearth.window.composer.set_text("Does my tasting note agree with the guide?")
