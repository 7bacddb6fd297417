"""A picture sent to a real tiny model that can see (Gemma 4 shape + its mmproj), through the
real bridge and SQLite: kept with its turn, given to the engine as an ImageRef, and still given
after the chat is reopened. The composer's side is in test_image_ui."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.chat.images import attach_image
from engine.engine import Engine
from engine.types import SamplingParams
from tests.app.conftest import close_session, make_session
from tests.engine.support import image_chat

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=3, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    model, _mmproj, _picture = image_chat.make_case("gemma4", tmp_path_factory.mktemp("gemma4"))
    engine = Engine(str(model), context_window=512)
    assert engine.info.vision_refusal == ""
    yield engine
    engine.close()


def test_a_sent_picture_reaches_the_engine_and_survives_a_reopen(
    run: Any, seeing: Engine, tmp_path: Path
) -> None:
    Image.new("RGB", (60, 40), (250, 200, 0)).save(str(tmp_path / "menu.png"))
    picture = attach_image(tmp_path / "menu.png", images_folder=tmp_path / "images")
    db = tmp_path / "hearth.sqlite3"
    session = make_session(run, seeing, db)
    try:
        session.set_params(GREEDY)
        run(session.send("What is on the menu?", [picture]))
        assert session.messages.rowCount() == 2
        reply = session.messages.item(1).record
        assert reply.role == "assistant" and reply.error is None and reply.content
        conversation = session.conversation_id
    finally:
        close_session(session)

    again = make_session(run, seeing, db)  # a restart: everything read back from the file
    try:
        run(again.open_conversation(conversation))
        assert again.messages.item(0).images == (picture,)
        (turn,) = [m for m in again.history(2) if m.role == "user"]
        assert [(r.path, r.sha256) for r in turn.images] == [(picture.path, picture.sha256)]
        again.set_params(GREEDY)
        # A regenerated reply and an edited question are new branches: the picture stays.
        run(again.regenerate(again.messages.item(1).id))
        run(again.edit(again.messages.item(0).id, "What is on this menu?"))
        first = again.messages.item(0)
        assert first.record.content == "What is on this menu?" and first.images == (picture,)
        (turn,) = [m for m in again.history(2) if m.role == "user"]
        assert [r.sha256 for r in turn.images] == [picture.sha256]
        run(again.send("And the prices?"))
        assert again.messages.item(again.messages.rowCount() - 1).record.error is None
    finally:
        close_session(again)
