"""What the main window gains after it is built: the Chinese reply options box, a chat's
safety review choice, the hint that points Chinese writers from the bundled model to Qwen3.5,
shortcuts, the font size, the trash and conversation organisation.

Owns `WindowExtras`, the composed set of these features that the application builds around a
`MainWindow` and keeps (``Application.extras``), so each feature lives in its own module with
its own state instead of growing the window's file or being bolted onto the window object.
Does not own any of the features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.views.accessibility import AccessibleNames
from app.views.chat.chinese_model_hint import install_chinese_model_hint
from app.views.chat.organise import Organiser
from app.views.dialogs.chinese_options import install_chinese_options
from app.views.dialogs.safety_options import install_safety_choice
from app.views.shortcuts import Shortcuts

if TYPE_CHECKING:
    from app.system.settings import Settings
    from app.views.chat.chinese_model_hint import ChineseModelHint
    from app.views.dialogs.chinese_options import ChineseOptionsBox
    from app.views.dialogs.safety_options import SafetyChoiceBox
    from app.views.main_window import MainWindow


@dataclass(frozen=True)
class WindowExtras:
    """The features built around a main window; each is a child QObject of the window."""

    chinese_options: ChineseOptionsBox
    safety_choice: SafetyChoiceBox
    chinese_model_hint: ChineseModelHint
    organiser: Organiser
    shortcuts: Shortcuts
    accessible_names: AccessibleNames

    @classmethod
    def install(cls, window: MainWindow, settings: Settings) -> WindowExtras:
        """Build them for ``window``; ``settings`` keeps the preferences they remember."""
        return cls(
            chinese_options=install_chinese_options(window),
            safety_choice=install_safety_choice(window),
            chinese_model_hint=install_chinese_model_hint(window, settings),
            organiser=Organiser(window, settings),
            shortcuts=Shortcuts(window, settings),
            accessible_names=AccessibleNames(window),
        )
