"""Every HEARTH_* environment variable has one home per side, and the docs list them all.

The engine's knobs are declared in engine/settings.py, the app's in app/system/environment.py
(name, kind, default, meaning); everything else reads them through those declarations. This
walks the syntax tree of every module in engine/ and app/ and fails on a ``"HEARTH_..."``
string that is a whole variable name anywhere else (an ``os.environ.get("HEARTH_X")``, an
``os.getenv``, a ``FOO_ENV = "HEARTH_X"`` constant read later) — messages that mention a name
inside a longer text are fine — and on a name mentioned anywhere (docstrings included) that
no home declares. docs/configuration.md must equal what ``make configuration-doc`` writes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.system import environment
from engine import settings

ROOT = Path(__file__).resolve().parents[1]
HOMES = {ROOT / "engine" / "settings.py", ROOT / "app" / "system" / "environment.py"}
NAME = re.compile(r"HEARTH_[A-Z0-9_]*[A-Z0-9]")
MENTION = re.compile(r"(?<!-D)\bHEARTH_[A-Z0-9_]*[A-Z0-9]")  # -DHEARTH_X: a C macro, no variable


def _modules() -> list[Path]:
    return sorted(p for top in ("engine", "app") for p in (ROOT / top).rglob("*.py"))


def stray_names(source: str) -> list[str]:
    """Whole ``HEARTH_*`` names written as string constants in ``source``, where a write into
    the environment (``os.environ[NAME] = ...``) is no read and does not count."""
    tree = ast.parse(source)
    stores = {
        id(node.slice)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and NAME.fullmatch(node.value)
        and id(node) not in stores
    ]


def test_hearth_variables_are_read_only_in_their_two_homes() -> None:
    found = {
        str(path.relative_to(ROOT)): names
        for path in _modules()
        if path not in HOMES and (names := stray_names(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "read HEARTH_* variables through engine.settings / app.system.environment"


def test_the_check_sees_a_read_and_lets_a_message_and_a_write_be() -> None:
    assert stray_names('import os\nx = os.environ.get("HEARTH_FOO")') == ["HEARTH_FOO"]
    assert stray_names('KEY = "HEARTH_FOO"') == ["HEARTH_FOO"]
    assert stray_names('raise ValueError("set HEARTH_FOO to a number")') == []
    assert stray_names('import os\nos.environ["HEARTH_FOO"] = "1"') == []


def test_every_hearth_variable_mentioned_is_declared_once() -> None:
    declared = [s.name for s in (*settings.SETTINGS, *environment.SETTINGS)]
    assert len(declared) == len(set(declared)), "a variable is declared twice"
    mentioned = {
        name for path in _modules() for name in MENTION.findall(path.read_text(encoding="utf-8"))
    }
    assert mentioned - set(declared) == set()


def test_the_configuration_page_is_generated_from_the_declarations() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == environment.configuration_markdown(), "run `make configuration-doc`"
