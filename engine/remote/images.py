"""Pictures for a remote OpenAI-compatible endpoint: a user turn's images as ``image_url`` parts.

Owns `with_images`: a wire message whose `Message.images` become ``image_url`` content parts
before its text (the order the engine's own template uses), each a ``data:`` URL of the file's
bytes as they are (the endpoint decodes and encodes them: vLLM, llama.cpp's server, Hearth's
own); a picture already given as a data: or http(s) URL is passed on unchanged. Whether the
endpoint's model can see is its to say (it answers an error otherwise). Does not own the rest
of the message (`engine.remote.tools.wire_message`).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from engine.errors import InvalidImageError
from engine.types import Message

MAX_IMAGE_BYTES = 20 * 2**20  # as Hearth's own server takes
_MAGIC = (
    (b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif"),
    (b"RIFF", "image/webp"), (b"BM", "image/bmp"),
)  # fmt: skip


def with_images(wire: dict[str, Any], message: Message) -> dict[str, Any]:
    """``wire`` (the message's JSON) with its images as parts; unchanged without images."""
    if not message.images:
        return wire
    parts: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": image_url(ref.path)}} for ref in message.images
    ]
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return {**wire, "content": parts}


def image_url(path: str) -> str:
    """A picture's URL for the endpoint: its file as a base64 data: URL."""
    if path.startswith(("data:", "http://", "https://")):
        return path
    file = Path(path)
    try:
        if file.stat().st_size > MAX_IMAGE_BYTES:
            raise InvalidImageError(f"{file.name} is larger than {MAX_IMAGE_BYTES // 2**20} MB")
        data = file.read_bytes()
    except OSError as e:
        raise InvalidImageError(f"{file.name} cannot be read: {e.strerror or e}") from None
    mime = next((m for magic, m in _MAGIC if data.startswith(magic)), "image/png")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
