"""Images in the generation loop (issue 31): a chat with a picture, end to end.

Tiny random-weight gemma3, gemma4 and qwen35 files with an mmproj beside them (LM Studio's
layout, found automatically): the Engine's greedy reply to a picture equals libmtmd's on the
same files and prompt text (pinned: `tests.engine.support.image_chat`). A second question about
the same picture costs no encode (a cache hit) and reuses the cached image tokens; another
picture does not match them; a model without a projector, or with one of another width, is
refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.synth.mmproj import tiny_shape, write_mmproj
from engine.engine import Engine
from engine.errors import InvalidParamsError, UnsupportedModelError
from engine.image_input import NO_PROJECTOR, find_mmproj
from engine.text import MEDIA_MARKER, ImageTokens, fit_context
from engine.types import (
    Finished,
    GenerationRequest,
    ImageRef,
    Message,
    PromptPrepared,
    SamplingParams,
)
from tests.engine.support import image_chat

GREEDY = SamplingParams(temperature=0, max_new_tokens=16)


def _ask(engine: Engine, picture: Path, question: str = image_chat.QUESTION) -> Finished:
    message = Message("user", question, images=(ImageRef(str(picture)),))
    events = list(engine.generate(GenerationRequest((message,), GREEDY, conversation_id="c")))
    finished = events[-1]
    assert isinstance(finished, Finished)
    return finished


@pytest.mark.parametrize("family", list(image_chat.PROJECTORS))
def test_reply_to_a_picture_equals_libmtmd(family: str, tmp_path: Path) -> None:
    model, _mmproj, picture = image_chat.make_case(family, tmp_path)
    engine = Engine(str(model), context_window=512)  # finds mmproj-model.gguf beside it
    assert engine.info.vision_refusal == "" and engine.info.image_tokens > 0
    reply = _ask(engine, picture)
    pinned = json.loads(image_chat.FIXTURE.read_text())[family]
    assert list(reply.token_ids) == pinned
    assert engine.last_images.tokens > 0 and engine.last_images.cache_hits == 0
    again = _ask(engine, picture)
    assert engine.last_images.cache_hits == 1 and engine.last_images.encode_s == 0.0
    assert again.token_ids == reply.token_ids
    assert again.stats.cached_prompt_tokens >= again.stats.prompt_tokens - 2  # image included
    engine.close()


def test_another_picture_does_not_reuse_the_image_tokens(tmp_path: Path) -> None:
    from PIL import Image

    model, _mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    other = tmp_path / "other.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(other)
    engine = Engine(str(model), context_window=512)
    _ask(engine, picture)
    image_at = next(i for i, t in enumerate(engine.runner.cached_ids) if t < 0)
    second = _ask(engine, other)
    assert 0 < second.stats.cached_prompt_tokens <= image_at  # the text before it only
    engine.close()


def test_no_projector_is_refused_in_one_line(tmp_path: Path) -> None:
    model, mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    mmproj.unlink()
    engine = Engine(str(model), context_window=512)
    assert engine.info.vision_refusal == NO_PROJECTOR
    with pytest.raises(UnsupportedModelError, match="no vision projector"):
        _ask(engine, picture)
    engine.close()


def test_a_projector_of_another_width_is_refused(tmp_path: Path) -> None:
    model, mmproj, _picture = image_chat.make_case("gemma3", tmp_path)
    wrong = write_mmproj(tmp_path / "wrong.gguf", tiny_shape("gemma3", proj_dim=96))
    with pytest.raises(UnsupportedModelError, match="96 values per token"):
        Engine(str(model), context_window=512, mmproj=wrong)
    mmproj.unlink()
    wrong.rename(tmp_path / "mmproj-other.gguf")  # found beside it: reported, not raised
    engine = Engine(str(model), context_window=512)
    assert "96 values per token" in engine.info.vision_refusal
    engine.close()


def test_find_mmproj_beside_the_model(tmp_path: Path) -> None:
    (tmp_path / "model.gguf").write_bytes(b"")
    assert find_mmproj(tmp_path / "model.gguf") is None
    (tmp_path / "mmproj-F16.gguf").write_bytes(b"")
    assert find_mmproj(tmp_path / "model.gguf") == tmp_path / "mmproj-F16.gguf"


class _Chars:
    """A character-level tokenizer with a ChatML template (enough for placing ids)."""

    chat_template = None

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}

    def apply_chat_template(self, conversation, chat_template=None, **options):  # type: ignore[no-untyped-def]
        from jinja2 import Template

        return Template(chat_template).render(messages=conversation, **options)


def test_image_ids_go_where_the_template_puts_the_message() -> None:
    ref = ImageRef("/nowhere.png", sha256="ab" * 32)
    table = {(ref.sha256, None): ImageTokens((-5, -4, -3), "<", ">")}
    typed = Message("user", f"hi{MEDIA_MARKER}", images=(ref,))  # a typed marker is dropped
    fitted = fit_context(_Chars(), [typed], context_window=200, reserve_tokens=10, images=table)
    text = "".join(chr(i) if i > 0 else "#" for i in fitted.ids)
    assert "<im_start|>user\n<###>hi<|im_end|>" in text.replace("<|im_start|>", "<im_start|>")
    with pytest.raises(InvalidParamsError, match="not encoded"):
        fit_context(_Chars(), [typed], context_window=200, reserve_tokens=10, images={})
    bare = fit_context(_Chars(), [typed], context_window=200, reserve_tokens=10)
    assert min(bare.ids) > 0  # counted without its image: the marker is dropped


@pytest.mark.parametrize("family", ["gemma3", "qwen35"])
def test_a_reopened_image_chat_needs_no_encode_and_no_prefill(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a restart the chat's saved KV cache covers the picture's tokens, and its rows come
    from the vision cache on disk: the next turn encodes nothing and prefills only new text."""
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEARTH_CHAT_CACHE_DIR", str(tmp_path / "cache" / "conversations"))
    model, _mmproj, picture = image_chat.make_case(family, tmp_path)
    first = Engine(str(model), context_window=512, saved_caches_bytes=2**30)
    done = _ask(first, picture)
    first.close()  # the app quits: the live cache is written
    again = Engine(str(model), context_window=512, saved_caches_bytes=2**30)  # a restart
    message = Message("user", image_chat.QUESTION, images=(ImageRef(str(picture)),))
    turns = (message, Message("assistant", done.text), Message("user", "And the colours?"))
    events = list(again.generate(GenerationRequest(turns, GREEDY, conversation_id="c")))
    reopened = events[-1]
    assert isinstance(reopened, Finished) and reopened.reason in ("length", "stop")
    assert again.last_images.encode_s == 0.0 and again.last_images.cache_hits == 1
    assert reopened.stats.cached_prompt_tokens >= done.stats.prompt_tokens
    again.close()


def test_the_torch_path_refuses_images_in_one_line(tmp_path: Path) -> None:
    model, _mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    engine = Engine(str(model), context_window=512, backend="torch")
    assert engine.info.vision_refusal.startswith("the torch path cannot read images")
    with pytest.raises(UnsupportedModelError, match="torch path cannot read images"):
        _ask(engine, picture)
    engine.close()


def test_count_tokens_counts_the_pictures_as_the_prompt_will(tmp_path: Path) -> None:
    model, _mmproj, picture = image_chat.make_case("gemma4", tmp_path)
    engine = Engine(str(model), context_window=512)
    for budget in (None, 140):
        message = Message("user", "Read it.", images=(ImageRef(str(picture), budget=budget),))
        request = GenerationRequest((message,), SamplingParams(temperature=0, max_new_tokens=1))
        events = list(engine.generate(request))
        prepared = events[0]
        assert isinstance(prepared, PromptPrepared)
        assert engine.count_tokens((message,)) == prepared.prompt_tokens
    engine.close()
