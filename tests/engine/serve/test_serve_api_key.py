"""`serve`'s API key kept out of the process list (issue 22 design note): from
``--api-key-file`` (its first line) or $HEARTH_API_KEY; clear errors for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.__main__ import build_parser
from engine.cli.serve import api_key_of
from engine.errors import InvalidParamsError


def parse(*extra: str):  # type: ignore[no-untyped-def]
    argv = ["serve", *extra]
    return build_parser(argv).parse_args(argv)


def test_the_key_comes_from_a_file_the_variable_or_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HEARTH_API_KEY", raising=False)
    assert api_key_of(parse()) is None
    key_file = tmp_path / "key"
    key_file.write_text("  s3cret \nignored\n", encoding="utf-8")
    assert api_key_of(parse("--api-key-file", str(key_file))) == "s3cret"
    monkeypatch.setenv("HEARTH_API_KEY", "from-env")
    assert api_key_of(parse()) == "from-env"
    assert api_key_of(parse("--api-key", "flag")) == "flag"


def test_a_bad_key_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidParamsError, match="cannot read the API key file"):
        api_key_of(parse("--api-key-file", str(tmp_path / "absent")))
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidParamsError, match="is empty"):
        api_key_of(parse("--api-key-file", str(tmp_path / "empty")))
    with pytest.raises(InvalidParamsError, match="not both"):
        api_key_of(parse("--api-key", "k", "--api-key-file", str(tmp_path / "empty")))
