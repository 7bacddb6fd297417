"""The local server takes documents the OpenAI way, on the real tiny engine over real HTTP: text
parts are joined; a "file" part with inline text (a data: URL) becomes a delimited document put
before the text; any other part type, a binary file or a file_id upload gets a 400 naming it."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from engine.serve.server import serve_in_thread
from engine.types import Message

KEY = "test-server-documents-key"
NOTE = "The spare key is under the blue flowerpot.\n"


@pytest.fixture(scope="module")
def server(tiny_engine: Any) -> Any:
    with serve_in_thread(tiny_engine, api_key=KEY) as handle:
        yield handle


def _post(server: Any, content: Any) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 2,
            "temperature": 0}  # fmt: skip
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.post(f"{server.url}/chat/completions", json=body, headers=headers, timeout=60)


def _file(name: str, mime: str, data: bytes) -> dict[str, Any]:
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return {"type": "file", "file": {"filename": name, "file_data": url}}


def test_text_and_file_parts_become_one_message_documents_first(
    server: Any, tiny_engine: Any
) -> None:
    parts = [
        {"type": "text", "text": "Where is "},
        _file("notes.txt", "text/plain", NOTE.encode()),
        {"type": "text", "text": "the key?"},
    ]
    rsp = _post(server, parts)
    assert rsp.status_code == 200, rsp.text
    expected = f'<document name="notes.txt">\n{NOTE.strip()}\n</document>\n\nWhere is the key?'
    tokens = tiny_engine.count_tokens((Message("user", expected),))
    assert rsp.json()["usage"]["prompt_tokens"] == tokens


@pytest.mark.parametrize(
    "part, words",
    [
        (
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
            "no vision projector",
        ),  # a text-only model: issue 31's one-line refusal
        (
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            "image URLs are not fetched",
        ),
        (
            {"type": "image_url", "image_url": {"url": "data:text/plain;base64,AA=="}},
            "must be base64 image/*",
        ),
        ({"type": "input_audio", "input_audio": {}}, "'input_audio'"),
        (_file("scan.pdf", "application/pdf", b"%PDF-1.7"), "'scan.pdf' is application/pdf"),
        ({"type": "file", "file": {"file_id": "file-123"}}, "file_id uploads are not supported"),
        (_file("bad.txt", "text/plain", b"\xff\xfe\xfa"), "'bad.txt' is not UTF-8 text"),
    ],
)
def test_unsupported_parts_get_400_naming_them(server: Any, part: Any, words: str) -> None:
    rsp = _post(server, [{"type": "text", "text": "hi"}, part])
    assert rsp.status_code == 400, rsp.text
    assert words in rsp.json()["error"]["message"]
