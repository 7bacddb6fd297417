"""`generate --api-key-env`: a key is read only from a variable the user named.

Without the flag no key is sent, even when OPENAI_API_KEY is set: a default would hand that
key to whatever --base-url points at. (The named-variable path runs end to end against a real
server in test_remote.py.)
"""

from __future__ import annotations

import pytest

from engine.__main__ import build_parser
from engine.cli.generate import _api_key
from engine.errors import InvalidParamsError

ARGV = ["generate", "--base-url", "http://127.0.0.1:9/v1", "--prompt", "hi"]


def test_no_flag_reads_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    args = build_parser(ARGV).parse_args(ARGV)
    assert args.api_key_env is None
    assert _api_key(args.api_key_env) is None


def test_named_variable_is_read_and_a_missing_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [*ARGV, "--api-key-env", "HEARTH_TEST_ENDPOINT_KEY"]
    args = build_parser(argv).parse_args(argv)
    monkeypatch.setenv("HEARTH_TEST_ENDPOINT_KEY", "k-123")
    assert _api_key(args.api_key_env) == "k-123"
    monkeypatch.delenv("HEARTH_TEST_ENDPOINT_KEY")
    with pytest.raises(InvalidParamsError, match="HEARTH_TEST_ENDPOINT_KEY"):
        _api_key(args.api_key_env)
