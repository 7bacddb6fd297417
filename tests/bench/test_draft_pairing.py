"""`bench draft-pairing`: the replay's arithmetic, and the agreement measured on the real engine.

The replay decides whether a draft-model pairing goes into the catalogue, so its cycle count
is checked by hand; the agreement must be exactly 1 where the draft is the target itself (on
the fast path a 1-token step and a row of a longer run round alike), which a wrong offset
between the draft's guesses and the reply's ids would break.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from bench.draft_pairing import cost_at, replay, run, speedups


def test_a_cycle_keeps_the_agreeing_run_and_the_targets_next_id() -> None:
    agree = [True, True, True, False, True, True]
    # pos 1: ids 1, 2 held (k = 2), the target's id 3 -> pos 4; pos 4: ids 4, 5 held -> done
    assert replay(agree, 2, draft_step=1.0, verify=3.0) == 10.0
    # nothing agrees: one id a cycle, each paying a draft of k and a verify
    assert replay([True, False, False, False], 1, draft_step=1.0, verify=3.0) == 12.0


def test_the_verify_cost_is_read_between_and_beyond_the_measured_points() -> None:
    cost = {1: 1.2, 2: 1.4, 4: 1.8, 8: 2.6}
    assert cost_at(cost, 3) == pytest.approx(1.6)
    assert cost_at(cost, 6) == pytest.approx(2.2)
    assert cost_at(cost, 4) == pytest.approx(1.8)


def test_a_free_draft_that_always_holds_gains_its_length_over_the_verify_cost() -> None:
    gains = speedups([True] * 9, plain_step=1.0, draft_step=0.0, cost={1: 1.0, 8: 2.0})
    assert gains[8] == pytest.approx(4.0)  # 8 ids in one cycle costing 2 plain steps
    assert gains[1] == pytest.approx(2.0)  # 4 cycles of 2 ids (the draft's, the target's)


@pytest.mark.slow
def test_the_bundled_model_drafting_for_itself_agrees_everywhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argparse.Namespace(target="bundled", draft="bundled", tokens=24, pairs=1, json=True)
    assert run(args) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert [row["kind"] for row in report["rows"]] == ["document", "code", "chat"]
    for row in report["rows"]:
        assert row["tokens"] >= 8 and row["agreement"] == 1.0
        assert row["target_tok_s"] > 0 and row["draft_tok_s"] > 0
