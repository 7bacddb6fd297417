"""A request's structured-output field as OpenAI's ``response_format``, for remote endpoints.

Owns writing `GenerationRequest.response_format` on the wire ({} when there is none), so a
remote OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Hearth's own) enforces the same
JSON or JSON schema the local engine would. Does not own enforcing it locally
(`engine.tools.grammar`) or reading it from a client (`engine.serve.response_format`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.types import GenerationRequest


def response_format_fields(request: GenerationRequest) -> dict[str, Any]:
    fmt = request.response_format
    if fmt is None or fmt.kind == "text":
        return {}
    if fmt.kind != "json_schema":
        return {"response_format": {"type": fmt.kind}}
    spec = {
        "name": fmt.name or "response",
        "schema": json.loads(fmt.schema) if fmt.schema else {},
        "strict": fmt.strict,
    }
    return {"response_format": {"type": "json_schema", "json_schema": spec}}
