"""A hostile chat template (issue 22 A1): loops, doubling strings, lipsum, huge ranges and
recursive macros are stopped with a one-line error naming the limit; Stop ends a render; a
normal template still renders as before. Runs the real transformers tokenizer (SmolLM2)."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from engine.errors import InvalidParamsError
from engine.template_sandbox import (
    RenderCancelled,
    TemplateLimitError,
    TemplateLimits,
    run_limited,
)
from engine.text import fit_context, render_prompt
from engine.types import Message
from tests.engine.support.tokenizer_fixture import smollm2_tokenizer

HI = [Message("user", "Hi")]

NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
DOUBLING = (
    "{% set ns = namespace(s='abcdefgh') %}"
    "{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
)
BIG_OUTPUT = "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"
LIPSUM = "{{ lipsum(n=10**7) }}"
HUGE_RANGE = "{% for i in range(10**9) %}{% endfor %}"
RECURSIVE = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"


@pytest.fixture(scope="module")
def tok() -> Any:
    return smollm2_tokenizer()


def with_template(tok: Any, template: str) -> Any:
    hostile = copy.copy(tok)
    hostile.chat_template = template
    return hostile


@pytest.mark.parametrize(
    ("template", "limit"),
    [
        (DOUBLING, "value it built"),
        (BIG_OUTPUT, "output passed"),
        (HUGE_RANGE, "Range too big"),
        (RECURSIVE, "deep"),
    ],
    ids=["doubling", "output", "huge-range", "recursion"],
)
def test_hostile_template_is_stopped_with_the_limit_named(tok, template, limit) -> None:
    small = TemplateLimits(max_output_chars=1_000_000)
    with pytest.raises(TemplateLimitError, match=limit):
        run_limited(lambda: render_prompt(with_template(tok, template), HI), limits=small)


@pytest.mark.parametrize("template", [NESTED_LOOPS, LIPSUM], ids=["nested-loops", "lipsum"])
def test_a_template_that_runs_too_long_is_stopped(tok, template) -> None:
    brief = TemplateLimits(max_seconds=0.2)
    with pytest.raises(TemplateLimitError, match="ran for more than"):
        run_limited(lambda: render_prompt(with_template(tok, template), HI), limits=brief)


def test_default_limits_apply_to_render_prompt(tok) -> None:
    """Without any caller opting in: the huge range and recursion are clean InvalidParamsErrors
    (they were an OverflowError and a RecursionError traceback)."""
    for template in (HUGE_RANGE, RECURSIVE):
        with pytest.raises(InvalidParamsError, match="chat template was stopped"):
            render_prompt(with_template(tok, template), HI)


def test_cancel_ends_a_render_in_progress(tok) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    try:
        with pytest.raises(RenderCancelled):
            fit_context(
                with_template(tok, NESTED_LOOPS),
                HI,
                context_window=2048,
                reserve_tokens=16,
                cancel=cancel,
            )
    finally:
        timer.cancel()


def test_an_ordinary_template_renders_unchanged_and_the_tracer_is_restored(tok) -> None:
    import sys

    before = sys.gettrace()
    text = render_prompt(tok, [Message("user", "Hello there")])
    assert "Hello there" in text and text.endswith("<|im_start|>assistant\n")
    assert sys.gettrace() is before
