"""The long test files go first (tests/conftest.py `LONG_FIRST`), so two workers end together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import LONG_FIRST, pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Item:
    nodeid: str


def test_every_long_file_named_is_there() -> None:
    missing = [path for path in LONG_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"renamed or gone: update LONG_FIRST in tests/conftest.py: {missing}"


def test_long_files_come_first_in_their_order_and_the_rest_keep_theirs() -> None:
    items = [Item("tests/a/test_x.py::t1"), Item(f"{LONG_FIRST[1]}::t"),
             Item("tests/a/test_x.py::t2"), Item(f"{LONG_FIRST[0]}::t[1]"),
             Item("tests/b/test_y.py::t"), Item(f"{LONG_FIRST[0]}::t[2]")]  # fmt: skip
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [item.nodeid for item in items] == [
        f"{LONG_FIRST[0]}::t[1]", f"{LONG_FIRST[0]}::t[2]", f"{LONG_FIRST[1]}::t",
        "tests/a/test_x.py::t1", "tests/a/test_x.py::t2", "tests/b/test_y.py::t"]  # fmt: skip
