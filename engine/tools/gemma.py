"""Gemma 4's tool-call argument syntax, turned into JSON.

Gemma 4 writes a call's arguments as ``{key:<|"|>text<|"|>,n:3,flag:true,xs:[1,2]}``: bare
keys, strings between ``<|"|>`` quote tokens (anything inside is literal), JSON numbers,
booleans, null, arrays and objects. Owns only that conversion; the call markers are
`engine.tools.parse`'s, rendering calls back into a prompt is the model's own template's.
"""

from __future__ import annotations

import json

QUOTE = '<|"|>'


def gemma_args_to_json(text: str) -> str:
    """``text`` in Gemma 4's argument syntax as JSON text. Raises ValueError when a string
    is left unterminated; anything else malformed is left for ``json.loads`` to refuse."""
    out: list[str] = []
    at = 0
    while at < len(text):
        if text.startswith(QUOTE, at):
            end = text.find(QUOTE, at + len(QUOTE))
            if end < 0:
                raise ValueError("unterminated Gemma string")
            out.append(json.dumps(text[at + len(QUOTE) : end], ensure_ascii=False))
            at = end + len(QUOTE)
        elif text[at] == '"':
            end = _json_string_end(text, at)
            out.append(text[at:end])
            at = end
        elif text[at].isalpha() or text[at] == "_":
            end = at
            while end < len(text) and (text[end].isalnum() or text[end] in "_-."):
                end += 1
            word = text[at:end]
            is_key = text[end:].lstrip().startswith(":")
            out.append(json.dumps(word) if is_key else word)
            at = end
        else:
            out.append(text[at])
            at += 1
    return "".join(out)


def _json_string_end(text: str, start: int) -> int:
    at = start + 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] == '"':
            return at + 1
        at += 1
    raise ValueError("unterminated JSON string")
