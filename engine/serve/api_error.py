"""The server's error reply: an HTTP status plus OpenAI's ``error`` object.

Owns `ApiError`, which every request parser (`engine.serve.schema`, `.response_format`,
`.tools_schema`) raises for a bad field and `engine.serve.replies` turns into a body. Does not
own mapping engine errors onto statuses (`engine.serve.replies`).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error reply: HTTP status plus the OpenAI-style ``error`` object."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "invalid_request_error",
            415: "invalid_request_error",
            503: "server_error",
        }.get(self.status, "server_error" if self.status >= 500 else "invalid_request_error")
        return {
            "error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        }
