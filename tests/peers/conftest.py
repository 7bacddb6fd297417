"""Peer checks against other engines' servers: run only by `make peer-test` (``-m peer``).

They need llama-cpp-python (compiled by `make bench-peers`, ~12 min), so `make test` never runs
them: without ``-m peer`` in the command line they are skipped even where llama_cpp is
installed, and with it they are skipped when llama_cpp is missing.
"""

from __future__ import annotations

import importlib.util

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "peer: compares Hearth with another engine (make peer-test)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = "peer" in (config.option.markexpr or "") and "not peer" not in config.option.markexpr
    missing = importlib.util.find_spec("llama_cpp") is None
    for item in items:
        if "peer" not in item.keywords:
            continue
        if not chosen:
            item.add_marker(pytest.mark.skip(reason="peer check: run it with make peer-test"))
        elif missing:
            item.add_marker(
                pytest.mark.skip(reason="llama_cpp is not installed (make bench-peers)")
            )
