"""`python -m engine generate/perplexity --image`: a picture from the command line (issue 31).

A tiny gemma3 with its mmproj beside it: the JSON done record reports the image's tokens and
the encode time, and its reply is libmtmd's (pinned, `tests.engine.support.image_chat`);
perplexity scores a text after the picture; without a projector, or with a missing picture,
the command exits 2 with one line and no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.cli.test_cli import engine_cli
from tests.engine.support import image_chat


def test_generate_and_perplexity_with_an_image(tmp_path: Path) -> None:
    model, mmproj, picture = image_chat.make_case("gemma3", tmp_path)
    ask = ["generate", "--model", str(model), "--image", str(picture), "--prompt",
           image_chat.QUESTION, "--temperature", "0", "--max-tokens", "16", "--json"]  # fmt: skip
    proc = engine_cli(*ask)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.strip().splitlines()[-1])
    assert done["image_tokens"] == 16 and done["image_encode_s"] >= 0
    assert done["token_ids"] == json.loads(image_chat.FIXTURE.read_text())["gemma3"]
    text = tmp_path / "t.txt"
    text.write_text("a few words that follow the picture", encoding="utf-8")
    proc = engine_cli("perplexity", "--model", str(model), "--mmproj", str(mmproj), "--image",
                      str(picture), "--file", str(text), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tokens"] > 0
    mmproj.unlink()
    proc = engine_cli(*ask)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: this model has no vision projector — download its mmproj"
    ]


def test_a_missing_image_exits_2_before_loading(tmp_path: Path) -> None:
    proc = engine_cli("generate", "--image", str(tmp_path / "nope.png"), "--prompt", "hi")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --image {tmp_path / 'nope.png'}: no such file"
    ]
