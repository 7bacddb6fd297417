"""OpenAI's ``response_format`` on the wire, for the local server.

Owns validating a body's ``response_format`` (``{"type": "text"}``, ``{"type": "json_object"}``
or ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``) into a
`ResponseFormat`, and checking before anything runs that the engine can enforce the schema:
every bad field is an `ApiError(400)` naming it. Does not own enforcing it at sampling time
(`engine.tools.grammar`) or the rest of the wire format (`engine.serve.schema`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.errors import InvalidParamsError
from engine.serve.api_error import ApiError
from engine.types import ResponseFormat

MAX_SCHEMA_CHARS = 200_000  # a schema this large is a client bug, not a reply shape


def _error(message: str, param: str) -> Exception:
    return ApiError(400, message, param=param)


def parse_response_format(body: dict[str, Any]) -> ResponseFormat | None:
    """The body's ``response_format``, or None when absent or ``{"type": "text"}``."""
    raw = body.get("response_format")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _error("response_format must be an object with a type", "response_format")
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat("json_object")
    if kind != "json_schema":
        raise _error(
            f"response_format.type must be text, json_object or json_schema, got {kind!r}",
            "response_format.type",
        )
    fmt = _json_schema(raw.get("json_schema"))
    _check_enforceable(fmt)
    return fmt


def _json_schema(spec: Any) -> ResponseFormat:
    where = "response_format.json_schema"
    if not isinstance(spec, dict):
        raise _error(f"{where} must be an object with name and schema", where)
    name = spec.get("name", "")
    if not isinstance(name, str):
        raise _error(f"{where}.name must be a string", f"{where}.name")
    strict = spec.get("strict", False)
    if not isinstance(strict, bool) and strict is not None:
        raise _error(f"{where}.strict must be true or false", f"{where}.strict")
    schema = spec.get("schema", {})
    if not isinstance(schema, dict):
        raise _error(f"{where}.schema must be a JSON Schema object", f"{where}.schema")
    text = json.dumps(schema)
    if len(text) > MAX_SCHEMA_CHARS:
        raise _error(f"{where}.schema is longer than {MAX_SCHEMA_CHARS} characters", where)
    # Enforced whether or not strict is set: a local model needs the grammar to stay valid.
    return ResponseFormat("json_schema", schema=text, name=name, strict=bool(strict))


def _check_enforceable(fmt: ResponseFormat) -> None:
    from engine.tools.grammar import response_format_grammar

    try:
        response_format_grammar(fmt)
    except InvalidParamsError as exc:
        raise _error(str(exc), "response_format.json_schema.schema") from None
