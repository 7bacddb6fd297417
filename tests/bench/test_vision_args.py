"""`python -m bench vision` refuses counts below one in one line, before any file is written."""

from __future__ import annotations

from typing import Any

import pytest

from bench.vision import main


@pytest.mark.parametrize("argv", [["--repeat", "0"], ["--threads", "0"]])
def test_a_count_below_one_is_refused(argv: list[str], tmp_path: Any, capsys: Any) -> None:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--folder", str(tmp_path / "vision")])
    assert done.value.code == 2
    assert "must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "vision").exists()
