"""What the main window gains after it is built: the Chinese reply options box, shortcuts, the
font size, the trash and conversation organisation.

Owns `install_window_extras`, the one call the application makes to add these to a built
`MainWindow`, so each feature lives in its own module instead of growing the window's file.
Does not own any of the features.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.views.accessibility import AccessibleNames
from app.views.chat.organise import Organiser
from app.views.dialogs.chinese_options import install_chinese_options
from app.views.shortcuts import Shortcuts

if TYPE_CHECKING:
    from app.system.settings import Settings
    from app.views.main_window import MainWindow


def install_window_extras(window: MainWindow, settings: Settings) -> None:
    """Add the extras to ``window``; ``settings`` keeps the preferences they remember."""
    window.chinese_options = install_chinese_options(window)  # type: ignore[attr-defined]
    window.organiser = Organiser(window, settings)  # type: ignore[attr-defined]
    window.shortcuts = Shortcuts(window, settings)  # type: ignore[attr-defined]
    window.accessible_names = AccessibleNames(window)  # type: ignore[attr-defined]
