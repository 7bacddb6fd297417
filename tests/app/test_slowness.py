"""`app.chat.slowness`: hand-made facts in, the causes they show out, in order, each with its
action; a quiet machine shows none, and a figure just on the safe side of each line shows
none either (so each cause's test can fail on a rule that fires too eagerly)."""

from __future__ import annotations

import pytest

from app.chat.slowness import GIB, MIB, SlowFacts, causes, diagnose, looks_slow

QUIET = SlowFacts(
    rss_bytes=2 * GIB,
    available_bytes=8 * GIB,
    swapped_bytes=0,
    cores=4,
    threads=4,
    disk_free_bytes=50 * GIB,
    decode_tok_s=30.0,
    expected_tok_s=32.0,
)


def _kinds(facts: SlowFacts) -> list[str]:
    return [kind for kind, _ in causes(facts)]


def test_a_quiet_machine_shows_nothing() -> None:
    assert diagnose(QUIET) == [] and not looks_slow(QUIET)
    assert diagnose(SlowFacts()) == []  # nothing measured: nothing claimed


@pytest.mark.parametrize(
    ("changes", "kind", "words"),
    [
        ({"swapped_bytes": 200 * MIB}, "swap", "200 MB"),
        ({"available_bytes": 300 * MIB}, "memory", "only 0.3 GB"),
        ({"threads": 3}, "core", "3 of 4 cores"),
        ({"slowdowns": 1}, "core", "4 of 4 cores"),
        ({"slow_path_reason": "Q3_K is not packed"}, "slow_path", "Q3_K is not packed"),
        ({"kernel_note": "no AVX2"}, "kernel", "no AVX2"),
        ({"disk_free_bytes": GIB // 2}, "disk", "0.5 GB free"),
        ({"dropped_messages": 6}, "context", "6 oldest messages"),
        ({"decode_tok_s": 9.0}, "speed", "9.0 tokens/s"),
    ],
)
def test_each_measured_cause_is_named_with_its_figure_and_an_action(
    changes: dict[str, object], kind: str, words: str
) -> None:
    facts = SlowFacts(**{**_fields(QUIET), **changes})
    assert _kinds(facts) == [kind]
    (found,) = diagnose(facts)
    assert words in found.cause and found.action and looks_slow(facts)


@pytest.mark.parametrize(
    "changes",
    [
        {"swapped_bytes": 8 * MIB},  # a few pages: noise
        {"available_bytes": 600 * MIB},
        {"disk_free_bytes": 2 * GIB},
        {"decode_tok_s": 17.0},  # over half the estimate
        {"expected_tok_s": None, "decode_tok_s": 1.0},  # no estimate: no claim
    ],
)
def test_a_figure_on_the_safe_side_is_not_a_cause(changes: dict[str, object]) -> None:
    assert causes(SlowFacts(**{**_fields(QUIET), **changes})) == []


def test_causes_come_most_costly_first_and_translate_before_the_figures_go_in() -> None:
    facts = SlowFacts(
        **{**_fields(QUIET), "swapped_bytes": GIB, "threads": 2, "dropped_messages": 3}
    )
    assert _kinds(facts) == ["swap", "core", "context"]
    seen: list[str] = []

    def translate(context: str, text: str) -> str:
        seen.append(context)
        return text.replace("oldest", "ältesten")

    assert "3 ältesten" in diagnose(facts, translate)[2].cause
    assert set(seen) == {"WhySlow"}


def _fields(facts: SlowFacts) -> dict[str, object]:
    return {name: getattr(facts, name) for name in SlowFacts.__slots__}
