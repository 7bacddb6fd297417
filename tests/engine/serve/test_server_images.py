"""The server takes pictures as OpenAI ``image_url`` parts (issue 31).

A tiny gemma3 with its mmproj: a data: URL picture gets the reply the engine gives the same
picture directly, and the next turn about it is a cache hit; an http(s) URL is fetched only
when the server allows it (here from a local HTTP server); refusals are tested with the text
model in test_server_documents.
"""

from __future__ import annotations

import base64
import functools
import http.server
import threading
from pathlib import Path

import httpx

from engine.engine import Engine
from engine.serve.server import serve_in_thread
from engine.types import Finished, GenerationRequest, ImageRef, Message, SamplingParams
from tests.engine.support import image_chat


def _ask(url: str, image_url: str) -> httpx.Response:
    parts = [{"type": "image_url", "image_url": {"url": image_url}},
             {"type": "text", "text": image_chat.QUESTION}]  # fmt: skip
    body = {"messages": [{"role": "user", "content": parts}], "max_tokens": 16, "temperature": 0}
    return httpx.post(f"{url}/chat/completions", json=body, timeout=120)


def test_image_url_parts_data_and_allowed_http(tmp_path: Path) -> None:
    model, _mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    engine = Engine(str(model), context_window=512)
    request = GenerationRequest(
        (Message("user", image_chat.QUESTION, images=(ImageRef(str(picture)),)),),
        SamplingParams(temperature=0, max_new_tokens=16),
    )
    direct = list(engine.generate(request))[-1]
    assert isinstance(direct, Finished)
    data_url = "data:image/png;base64," + base64.b64encode(picture.read_bytes()).decode()
    with serve_in_thread(engine, allow_image_urls=True) as server:
        reply = _ask(server.url, data_url)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == direct.text
        assert engine.last_images.cache_hits == 1  # the same picture: encoded once
        files = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
        site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), files)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        try:
            fetched = _ask(server.url, f"http://127.0.0.1:{site.server_address[1]}/pic.png")
        finally:
            site.shutdown()
        assert fetched.status_code == 200, fetched.text
        assert fetched.json()["choices"][0]["message"]["content"] == direct.text
        missing = _ask(server.url, f"http://127.0.0.1:{site.server_address[1]}/gone.png")
        assert missing.status_code == 400 and "could not be fetched" in missing.text
    engine.close()
