"""`python -m bench contention --beside`'s parts that need no timing: the neighbours really
run (a busy loop takes CPU time, a memory loop too, and both end when killed), unknown names
get one line, the ratio is against llama.cpp's better policy, and the table shows each cell.
"""

from __future__ import annotations

import time
from typing import Any

import psutil
import pytest

from bench.__main__ import main, parse_args
from bench.contention import check_args, contenders, neighbours, rotated
from bench.contention_beside import beside_table, merge_cell, ratios
from bench.neighbours import KINDS, commands, running
from engine.errors import InvalidParamsError


def test_the_beside_mode_defaults_to_every_neighbour_and_three_contenders() -> None:
    args = parse_args("contention", ["--beside"])
    assert neighbours(args) == list(KINDS)
    assert contenders(args) == ["engine", "llama.cpp", "llama.cpp passive"]
    assert "engine, no governor" in contenders(parse_args("contention", []))


def test_a_contender_whose_name_holds_a_comma_can_be_named() -> None:
    args = parse_args("contention", ["--beside", "--contenders", "engine,engine, no governor"])
    assert contenders(args) == ["engine", "engine, no governor"]
    check_args(args)  # no error: both are known
    args = parse_args("contention", ["--contenders", "engine, no governor,llama.cpp passive"])
    assert contenders(args) == ["engine, no governor", "llama.cpp passive"]


def test_unknown_names_are_one_line(capsys: Any) -> None:
    with pytest.raises(InvalidParamsError, match="unknown neighbour or contender: gpu-hog"):
        check_args(parse_args("contention", ["--beside", "--neighbours", "idle,gpu-hog"]))
    assert main(["contention", "--beside", "--contenders", "vllm"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown neighbour or contender: vllm"


@pytest.mark.parametrize("kind", ["busy1", "memory"])
def test_a_neighbour_takes_cpu_and_ends_with_the_block(kind: str) -> None:
    me = psutil.Process()
    with running(kind, "unused", settle_s=0.3):
        children = me.children()
        assert len(children) == len(commands(kind, "unused"))
        time.sleep(0.5)
        assert all(sum(c.cpu_times()[:2]) > 0.05 for c in children)
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)


def test_the_ratio_is_against_the_better_llama_policy_and_the_table_shows_it() -> None:
    cells = {
        "engine": {"idle": {"tok_s": 60.0, "threads": 2}, "busy1": {"tok_s": 30.0, "threads": 1}},
        "llama.cpp": {"idle": {"tok_s": 50.0}, "busy1": {"tok_s": 10.0}},
        "llama.cpp passive": {"idle": {"tok_s": 45.0}, "busy1": {"error": "died"}},
    }
    assert ratios(cells, ["idle", "busy1"]) == {"idle": 60.0 / 50.0, "busy1": 30.0 / 10.0}
    report = {"model": "m.gguf", "tokens": 128, "neighbours": ["idle", "busy1"],
              "cells": cells, "ratios": ratios(cells, ["idle", "busy1"])}  # fmt: skip
    text = beside_table(report)
    assert "60.0 [2]" in text and "30.0 [1]" in text and "1.20x" in text and "3.00x" in text
    assert "llama.cpp passive beside busy1: died" in text


def test_rounds_rotate_and_a_cell_is_the_median_of_its_rounds() -> None:
    names = ["engine", "llama.cpp", "llama.cpp passive"]
    assert [rotated(names, r)[0] for r in range(4)] == [
        "engine", "llama.cpp", "llama.cpp passive", "engine"]  # fmt: skip
    cell = merge_cell([{"tok_s": 30.0, "threads": 1}, {"error": "died"},
                       {"tok_s": 50.0, "threads": 2}, {"tok_s": 40.0, "threads": 2}])  # fmt: skip
    assert cell["tok_s"] == 40.0 and cell["rounds_tok_s"] == [30.0, 50.0, 40.0]
    assert cell["rounds_threads"] == [1, 2, 2] and cell["threads"] == 2
    assert merge_cell([{"error": "died"}, {"error": "again"}]) == {"error": "died"}
    with pytest.raises(InvalidParamsError, match="--rounds"):
        from bench.contention import run

        run(parse_args("contention", ["--beside", "--rounds", "0"]))


def test_the_table_shows_the_rounds_range_under_their_median_ratio() -> None:
    cells = {"engine": {"busy1": {"tok_s": 30.0, "threads": 1}},
             "llama.cpp": {"busy1": {"tok_s": 25.0}}}  # fmt: skip
    report = {"model": "m.gguf", "tokens": 128, "rounds": 3, "neighbours": ["busy1"],
              "cells": cells, "round_ratios": {"busy1": [0.95, 1.2, 1.1]},
              "ratios": {"busy1": 1.1}}  # fmt: skip
    text = beside_table(report)
    assert "median of 3 rounds" in text and "1.10x" in text and "0.95-1.20" in text
