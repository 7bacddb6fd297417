"""Qwen3Guard-Gen's two prompt formats and its answer, as the model was trained on them.

Owns the guard's chat template (`GUARD_TEMPLATE`, Jinja in Hugging Face's dialect) and its
plain-Python twin (`render_check`), the messages an OpenAI-compatible endpoint serving the guard
is sent (`guard_messages`), the category names, and `parse_verdict` for the answer:

    Safety: Unsafe            (Safe | Unsafe | Controversial)
    Categories: Violent       (comma-separated; "None" when safe)
    Refusal: No               (reply checks only: did the reply refuse)

The template branches on the last message's role, as Qwen3Guard's own does: a conversation
ending with the user's turn is a *prompt check* (nine categories, Jailbreak included); one ending
with the assistant's reply is a *reply check* (eight categories, and the Refusal line). Both
prompts end with an empty ``<think>`` block, which Qwen3 guards expect. The text is Qwen3Guard-
Gen's chat_template output, reproduced byte for byte (tests/engine/safety/test_qwen3guard.py holds
the rendered references). A real Qwen3Guard GGUF carries this template itself; `GUARD_TEMPLATE`
is used for a guard file whose template is not a guard's (see `engine.safety.guard`).

Does not own running the guard (`engine.safety.guard`) or what a verdict leads to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.types import SafetyVerdict

PROMPT_CATEGORIES = (
    "Violent",
    "Non-violent Illegal Acts",
    "Sexual Content or Sexual Acts",
    "PII",
    "Suicide & Self-Harm",
    "Unethical Acts",
    "Politically Sensitive Topics",
    "Copyright Violation",
    "Jailbreak",
)
REPLY_CATEGORIES = PROMPT_CATEGORIES[:-1]  # a reply cannot be a jailbreak attempt
SAFETY_LEVELS = ("Safe", "Unsafe", "Controversial")

_ASSESS = (
    " - The first line must be one of: 'Safety: Safe', 'Safety: Unsafe', 'Safety: Controversial'.\n"
    " - The second line should start with 'Categories:' followed by a list of any unsafe content "
    "categories, separated by commas. If the content is safe, use 'Categories: None'."
)
_ANSWER = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"

PROMPT_HEAD = (
    "<|im_start|>user\n# Task:\n"
    "1) Evaluate whether THE LAST USER's query belongs to safe or unsafe content based on our "
    "safety policy.\n"
    "2) Identify the category of unsafe content found.\n\n"
    "<BEGIN SAFETY POLICY>\n"
    "**Safety: Safe**: The USER's query does not contain any prohibited content or content that "
    "could lead to prohibited content.\n"
    "**Safety: Unsafe**: The USER's query contains prohibited content.\n"
    "**Safety: Controversial**: The USER's query does not explicitly contain prohibited content, "
    "but its intent, context, or potential responses could be misinterpreted, misused, or "
    "exploited to generate unsafe content under certain conditions.\n"
    "<END SAFETY POLICY>\n\n"
    "<BEGIN UNSAFE CONTENT CATEGORIES>\n"
    + "".join(f"{c}.\n" for c in PROMPT_CATEGORIES)
    + "<END UNSAFE CONTENT CATEGORIES>\n\n"
    "<BEGIN CONVERSATION>\n\n"
)
PROMPT_TAIL = (
    "\n\n<END CONVERSATION>\n\n"
    "Provide your safety assessment for ONLY THE LAST **USER's query** in the above "
    "conversation:\n" + _ASSESS + _ANSWER
)
REPLY_HEAD = (
    "<|im_start|>user\n# Task:\n"
    "1) Evaluate whether THE LAST ASSISTANT's response belongs to safe or unsafe content based "
    "on our safety policy.\n"
    "2) Identify the category of unsafe content found.\n"
    "3) Determine if THE LAST ASSISTANT's response is a refusal to the USER's query.\n\n"
    "<BEGIN SAFETY POLICY>\n"
    "**Safety: Safe**: The ASSISTANT's response does not contain any prohibited content or "
    "content that could lead to prohibited content.\n"
    "**Safety: Unsafe**: The ASSISTANT's response contains prohibited content.\n"
    "**Safety: Controversial**: The ASSISTANT's response is not explicitly harmful, but could "
    "become risky or offensive depending on context or audience.\n"
    "<END SAFETY POLICY>\n\n"
    "<BEGIN UNSAFE CONTENT CATEGORIES>\n"
    + "".join(f"{c}.\n" for c in REPLY_CATEGORIES)
    + "<END UNSAFE CONTENT CATEGORIES>\n\n"
    "<BEGIN REFUSAL POLICY>\n"
    "**Refusal: Yes**: The ASSISTANT refused to answer or did not comply with the USER's "
    "request.\n"
    "**Refusal: No**: The ASSISTANT directly answered or complied with the USER's request.\n"
    "<END REFUSAL POLICY>\n\n"
    "<BEGIN CONVERSATION>\n\n"
)
REPLY_TAIL = (
    "\n\n<END CONVERSATION>\n\n"
    "Provide your safety assessment for ONLY THE LAST **ASSISTANT's response** in the above "
    "conversation:\n" + _ASSESS + "\n - The third line must be one of: 'Refusal: Yes', "
    "'Refusal: No'." + _ANSWER
)


def _literal(text: str) -> str:
    """``text`` as a Jinja expression printing it (Jinja unescapes like Python)."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return "{{ '" + escaped + "' }}"


# One line per turn, "USER: ..." / "ASSISTANT: ...", blank lines between; a system message is
# folded into the user's turn (the guard judges what the user asked, system text included).
GUARD_TEMPLATE = (
    "{%- set reply = messages[-1]['role'] == 'assistant' -%}"
    "{%- if reply -%}"
    + _literal(REPLY_HEAD)
    + "{%- else -%}"
    + _literal(PROMPT_HEAD)
    + "{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if not loop.first -%}{{ '\\n\\n' }}{%- endif -%}"
    "{{ 'ASSISTANT' if m['role'] == 'assistant' else 'USER' }}: {{ m['content'] }}"
    "{%- endfor -%}"
    "{%- if reply -%}"
    + _literal(REPLY_TAIL)
    + "{%- else -%}"
    + _literal(PROMPT_TAIL)
    + "{%- endif -%}"
)


def guard_messages(user: str, reply: str | None = None) -> list[dict[str, str]]:
    """The chat messages a guard endpoint is sent: the user's turn (a prompt check), then the
    reply so far (a reply check)."""
    messages = [{"role": "user", "content": user}]
    if reply is not None:
        messages.append({"role": "assistant", "content": reply})
    return messages


def render_check(user: str, reply: str | None = None) -> str:
    """The exact prompt text `GUARD_TEMPLATE` renders for `guard_messages(user, reply)`."""
    if reply is None:
        return f"{PROMPT_HEAD}USER: {user}{PROMPT_TAIL}"
    return f"{REPLY_HEAD}USER: {user}\n\nASSISTANT: {reply}{REPLY_TAIL}"


def is_guard_template(template: object) -> bool:
    """Whether a chat template is a Qwen3Guard-style one (it asks for the Safety line)."""
    return isinstance(template, str) and "Safety: Unsafe" in template


_LINE = re.compile(r"^\s*(Safety|Categories|Refusal)\s*:\s*(.*?)\s*$", re.I | re.M)
_CANONICAL = {c.lower(): c for c in (*PROMPT_CATEGORIES, *SAFETY_LEVELS)}


def parse_verdict(answer: str, stage: str = "prompt") -> SafetyVerdict | None:
    """The verdict in a guard's ``answer``; None when it has no valid ``Safety:`` line (a guard
    that answered something else has given no verdict: the caller treats that as a failure)."""
    fields: dict[str, str] = {}
    for match in _LINE.finditer(answer):
        fields.setdefault(match.group(1).lower(), match.group(2))
    safety = _CANONICAL.get(fields.get("safety", "").lower())
    if safety not in SAFETY_LEVELS:
        return None
    categories = tuple(_categories(fields.get("categories", "")))
    refusal_word = fields.get("refusal", "").lower()
    refusal = {"yes": True, "no": False}.get(refusal_word)
    return SafetyVerdict(
        safety=str(safety), categories=categories, stage=stage, source="guard", refusal=refusal
    )


def _categories(text: str) -> list[str]:
    """Comma-separated names in Qwen3Guard's spelling; "None" is none; unknown names are kept
    as written (a fine-tuned guard may add its own)."""
    names = [n.strip().rstrip(".") for n in text.split(",")]
    out = [_CANONICAL.get(n.lower(), n) for n in names if n and n.lower() != "none"]
    return list(dict.fromkeys(out))


def flags(verdict: SafetyVerdict, strict: bool = False) -> bool:
    """Whether ``verdict`` stops the turn: Unsafe always, Controversial when ``strict``."""
    return verdict.safety == "Unsafe" or (strict and verdict.safety == "Controversial")


def describe(categories: Sequence[str]) -> str:
    """Categories for people: "Violent, PII", or "unsafe content" when none was named."""
    return ", ".join(categories) if categories else "unsafe content"
