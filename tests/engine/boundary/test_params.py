"""The parameter table (`engine.params`): it matches `SamplingParams`, validates with clear
messages, and drives the CLI flags, the server's fields and the remote request body."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from engine.cli.generate import add_sampling_flags, build_request
from engine.errors import InvalidParamsError
from engine.params import PARAMS, SamplingParams
from engine.remote.backend import ENDPOINT_KINDS, RemoteEngine
from engine.serve.schema import ApiError, parse_request
from engine.types import GenerationRequest, Message

USER = {"messages": [{"role": "user", "content": "hi"}]}


def test_every_sampling_field_has_exactly_one_row() -> None:
    fields = [f.name for f in dataclasses.fields(SamplingParams)]
    assert sorted(p.name for p in PARAMS) == sorted(fields)


@pytest.mark.parametrize("param", PARAMS, ids=lambda p: p.name)
def test_defaults_neutral_values_and_slider_ends_are_valid(param) -> None:  # type: ignore[no-untyped-def]
    assert param.error(getattr(SamplingParams(), param.name)) is None
    if param.neutral is not None:
        assert param.error(param.neutral) is None
    if param.slider is not None:
        assert param.error(param.slider.low) is None and param.error(param.slider.high) is None


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("temperature", 1e-300, "temperature must be 0 (greedy) or in [0.01, 100], got 1e-300"),
        ("temperature", 0.001, "temperature must be 0 (greedy) or in [0.01, 100]"),
        ("repetition_penalty", 1e-320, "repetition_penalty must be in [0.01, 100], got 1e-320"),
        ("repetition_penalty", 0, "repetition_penalty must be in [0.01, 100]"),
        ("temperature", float("nan"), "temperature must be"),
        ("top_p", 0.0, "top_p must be in (0, 1], got 0.0"),
        ("min_p", 1.0, "min_p must be in [0, 1), got 1.0"),
        ("top_k", 2.5, "top_k must be an integer, got 2.5"),
        ("top_k", True, "top_k must be an integer, got True"),
        ("temperature", "hot", "temperature must be a number, got 'hot'"),
        ("max_new_tokens", 0, "max_new_tokens must be >= 1, got 0"),
        ("num_beams", 17, "num_beams must be in [1, 16], got 17"),
        ("seed", -1, "seed must be an integer in [0, 2**63) or None, got -1"),
        ("stop", ("",), "stop must be a list of non-empty strings"),
        ("stop", "ab", "stop must be a list of non-empty strings, got 'ab'"),
    ],
)
def test_bad_values_are_refused_naming_the_field_and_the_range(field, value, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParamsError) as info:
        SamplingParams(**{field: value})
    assert words in str(info.value)


def test_greedy_and_the_switched_off_values_are_accepted() -> None:
    params = SamplingParams.neutral(temperature=0, seed=0, stop=["</s>"])
    assert params.greedy and params.stop == ("</s>",)
    assert params.top_k == 0 and params.top_p == 1.0 and params.repetition_penalty == 1.0


def test_penalties_are_off_by_default_so_greedy_is_plain_argmax() -> None:
    assert SamplingParams().repetition_penalty == 1.0


def test_every_cli_flag_reaches_its_field() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt", default="hi")
    parser.add_argument("--messages", default=None)
    parser.add_argument("--system", default=None)
    add_sampling_flags(parser)
    flags = {p.cli for p in PARAMS if p.cli}
    assert {a.option_strings[0] for a in parser._actions} >= flags
    args = parser.parse_args(
        ["--temperature", "0", "--top-k", "3", "--seed", "9", "--stop", "a", "--stop", "b",
         "--max-tokens", "7", "--num-beams", "2"]
    )  # fmt: skip
    params = build_request(args).params
    assert (params.temperature, params.top_k, params.seed) == (0.0, 3, 9)
    assert (params.stop, params.max_new_tokens, params.num_beams) == (("a", "b"), 7, 2)
    assert build_request(parser.parse_args([])).params == SamplingParams()


def test_server_reads_every_wire_field_and_defaults_to_switched_off() -> None:
    body = {**USER, "temperature": 0.5, "top_k": 4, "min_p": 0.1, "repeat_penalty": 1.3,
            "seed": 3, "max_completion_tokens": 9, "stop": "x"}  # fmt: skip
    params = parse_request(body, chat=True).generation.params
    assert (params.temperature, params.top_k, params.min_p) == (0.5, 4, 0.1)
    assert (params.repetition_penalty, params.seed, params.max_new_tokens) == (1.3, 3, 9)
    assert params.stop == ("x",)
    assert parse_request(USER, chat=True).generation.params == SamplingParams.neutral()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("temperature", 1e-300, "temperature must be 0 (greedy) or in [0.01, 100]"),
        ("repeat_penalty", 1e-320, "repeat_penalty must be in [0.01, 100]"),
        ("top_k", 1.5, "top_k must be an integer"),
        ("max_tokens", 0, "max_tokens must be >= 1"),
    ],
)
def test_server_errors_name_the_field_as_the_client_spelt_it(field, value, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ApiError) as info:
        parse_request({**USER, field: value}, chat=True)
    assert info.value.status == 400 and info.value.param == field
    assert words in info.value.message


def _body(kind: str, params: SamplingParams) -> dict[str, object]:
    remote = RemoteEngine("http://127.0.0.1:1", "m", kind=kind)
    try:
        return remote.request_body(GenerationRequest((Message("user", "hi"),), params))
    finally:
        remote.close()


def test_remote_body_sends_only_what_the_endpoint_kind_honours() -> None:
    params = SamplingParams(repetition_penalty=1.2, seed=5, stop=("END",))
    full = _body("vllm", params)
    assert full["repetition_penalty"] == full["repeat_penalty"] == 1.2
    assert (full["top_k"], full["min_p"], full["seed"], full["stop"]) == (40, 0.05, 5, ["END"])
    official = _body("openai", params)
    assert not {"top_k", "min_p", "repetition_penalty", "repeat_penalty"} & set(official)
    assert (official["temperature"], official["top_p"], official["max_tokens"]) == (0.7, 0.95, 512)
    assert "num_beams" not in full and "seed" not in _body("vllm", SamplingParams())


def test_supported_sets_come_from_the_table() -> None:
    standard = {p.name for p in PARAMS if p.remote == "all"}
    assert ENDPOINT_KINDS["openai"] == standard
    assert ENDPOINT_KINDS["vllm"] == {p.name for p in PARAMS if p.remote != "none"}
    assert "num_beams" not in ENDPOINT_KINDS["generic"]


def test_presence_and_frequency_penalties_reach_cli_server_and_remote() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt", default="hi")
    parser.add_argument("--messages", default=None)
    parser.add_argument("--system", default=None)
    add_sampling_flags(parser)
    args = parser.parse_args(["--presence-penalty", "0.5", "--frequency-penalty", "-1"])
    cli = build_request(args).params
    assert (cli.presence_penalty, cli.frequency_penalty) == (0.5, -1.0)
    body = {**USER, "presence_penalty": 1.5, "frequency_penalty": 0.25}
    served = parse_request(body, chat=True).generation.params
    assert (served.presence_penalty, served.frequency_penalty) == (1.5, 0.25)
    with pytest.raises(ApiError, match=r"frequency_penalty must be in \[-2, 2\]"):
        parse_request({**USER, "frequency_penalty": 2.5}, chat=True)
    sent = _body("openai", SamplingParams(presence_penalty=0.5, frequency_penalty=-1.0))
    assert (sent["presence_penalty"], sent["frequency_penalty"]) == (0.5, -1.0)
    assert {"presence_penalty", "frequency_penalty"} <= ENDPOINT_KINDS["ollama"]


def test_beam_search_honours_exactly_the_rows_marked_beam() -> None:
    """Issue 22 C4: the table's ``beam`` column was unread; beam.py kept its own list."""
    from engine.beam import APPLIED_AROUND, BEAM_PARAMS, GENERATE_ARGS, beam_kwargs

    assert BEAM_PARAMS == GENERATE_ARGS | APPLIED_AROUND
    base = SamplingParams(num_beams=3)
    kwargs = beam_kwargs(base, frozenset({2}), 16)
    for p in PARAMS:
        if p.name in ("num_beams", "max_new_tokens", "stop"):
            continue
        changed = _another_valid_value(base, p.name)
        moved = beam_kwargs(changed, frozenset({2}), 16) != kwargs
        assert moved == p.beam, f"{p.name}: beam={p.beam} but generate() args moved={moved}"


def _another_valid_value(base: SamplingParams, name: str) -> SamplingParams:
    for value in (0.5, 7, 1.3, 2, 42):
        try:
            changed = dataclasses.replace(base, **{name: value})
        except InvalidParamsError:
            continue
        if changed != base:
            return changed
    raise AssertionError(f"no other valid value found for {name}")
