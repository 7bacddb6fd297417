"""Remote endpoints get a turn's pictures as ``image_url`` parts (issue 31).

Against Hearth's own server over real HTTP (a tiny gemma3 with its mmproj): the remote
backend's reply about a picture equals the local engine's; the body carries the file as a
data: URL before the text, and a URL picture is passed on as it is.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from engine.engine import Engine
from engine.errors import InvalidImageError
from engine.remote.backend import RemoteEngine
from engine.serve.server import serve_in_thread
from engine.types import Finished, GenerationRequest, ImageRef, Message, SamplingParams
from tests.engine.support import image_chat


def _request(picture: str) -> GenerationRequest:
    message = Message("user", image_chat.QUESTION, images=(ImageRef(picture),))
    return GenerationRequest((message,), SamplingParams(temperature=0, max_new_tokens=16))


def test_a_remote_reply_about_a_picture_equals_the_local_one(tmp_path: Path) -> None:
    model, _mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    engine = Engine(str(model), context_window=512)
    local = list(engine.generate(_request(str(picture))))[-1]
    assert isinstance(local, Finished)
    with serve_in_thread(engine) as server:
        remote = RemoteEngine(base_url=server.url, model="bundled")
        assert remote.info.vision_refusal == ""
        reply = list(remote.generate(_request(str(picture))))[-1]
        remote.close()
    assert isinstance(reply, Finished) and reply.text == local.text
    engine.close()


def test_the_body_holds_the_picture_before_the_text(tmp_path: Path) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\nrest")
    body = RemoteEngine("http://gpu:8000", "m", kind="vllm").request_body(_request(str(picture)))
    parts = body["messages"][0]["content"]
    encoded = base64.b64encode(picture.read_bytes()).decode()
    assert parts == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
        {"type": "text", "text": image_chat.QUESTION},
    ]
    url = RemoteEngine("http://gpu:8000", "m").request_body(_request("https://x.test/a.jpg"))
    assert url["messages"][0]["content"][0]["image_url"]["url"] == "https://x.test/a.jpg"
    with pytest.raises(InvalidImageError, match=r"gone\.png cannot be read"):
        RemoteEngine("http://gpu:8000", "m").request_body(_request(str(tmp_path / "gone.png")))
