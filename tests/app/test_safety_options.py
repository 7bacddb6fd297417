"""The safety review's controls in the real window: Preferences (saved, checked, applied to the
session at once) and a chat's own choice under the settings panel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.application import Application
from app.chat.safety_config import SafetyConfig
from app.views.dialogs.preferences import PreferencesDialog
from app.views.dialogs.safety_options import SafetyChoiceBox
from tests.app.conftest import GatedBackend
from tests.app.test_shortcuts import _action, _start


@pytest.fixture
def hearth(qapp: Any, run: Any, gated: GatedBackend, tmp_path: Path) -> Iterator[Application]:
    app = _start(qapp, run, tmp_path, gated)
    yield app
    gated.gate.set()
    app.session.bridge.detach()
    run(app.shutdown())


def test_preferences_save_the_review_and_the_session_uses_it(hearth: Application) -> None:
    _action(hearth, "Ctrl+,").trigger()
    prefs = hearth.window.findChildren(PreferencesDialog)[-1]
    prefs.safety.enabled.setChecked(True)
    prefs.safety.blocklist.setPlainText("bomb\nre:\\bkill(s|ing)?\\b")
    prefs.safety.required.setChecked(True)
    prefs.accept()
    want = SafetyConfig(enabled=True, blocklist="bomb\nre:\\bkill(s|ing)?\\b", required=True)
    assert SafetyConfig.from_dict(hearth.settings.safety()) == want
    assert hearth.session.safety_config == want
    assert hearth.session.safety_config.for_chat(hearth.session.safety_choice) is not None


def test_a_blocklist_that_cannot_be_used_keeps_preferences_open(hearth: Application) -> None:
    _action(hearth, "Ctrl+,").trigger()
    prefs = hearth.window.findChildren(PreferencesDialog)[-1]
    prefs.safety.blocklist.setPlainText("fine\nre:(a+)+$")
    prefs.accept()
    assert prefs.isVisible() and prefs.result() == 0
    assert "line 2" in prefs.safety.problem.text() and "too slow" in prefs.safety.problem.text()
    assert hearth.settings.safety() == {}  # nothing saved


def test_a_chats_choice_reaches_the_session(hearth: Application) -> None:
    box = hearth.window.findChildren(SafetyChoiceBox)[-1]
    box.choice.setCurrentIndex(box.choice.findData("off"))
    assert hearth.session.safety_choice == "off"
    box.set_choice("on")
    assert hearth.session.safety_choice == "off"  # showing a chat's choice is not a change
