"""Every ``HEARTH_*`` environment knob the app reads, declared once (the app's half).

Owns the app's own declarations (name, kind, default, one line of meaning) as
`engine.settings.Setting` constants, read when asked; the variables the engine reads too
(``HEARTH_DATA_DIR``, ``HEARTH_CACHE_DIR``, ...) are the engine's declarations
(`engine.settings`), re-named here so the app has one place to look. docs/configuration.md,
both halves, is `configuration_markdown` (``make configuration-doc`` writes it). Does not own
the user's settings file (`app.system.settings`).
"""

from __future__ import annotations

import sys

from engine import settings as engine_settings
from engine.settings import CACHE_DIR, DATA_DIR, Setting, markdown_table

LOG_DIR = Setting(
    "HEARTH_LOG_DIR", "path", "<HEARTH_DATA_DIR>/logs when that is set, else the platform's",
    "where the app writes its log and crash files",
)  # fmt: skip
INSTALL_SYSTEM_DEPS = Setting(
    "HEARTH_INSTALL_SYSTEM_DEPS", "switch", "off",
    "1: when Qt's X11 libraries are missing and Hearth runs as root, install them with apt",
)  # fmt: skip

SETTINGS: tuple[Setting, ...] = (LOG_DIR, INSTALL_SYSTEM_DEPS)
SHARED: tuple[Setting, ...] = (DATA_DIR, CACHE_DIR)  # declared by the engine, read here too


def configuration_markdown() -> str:
    """docs/configuration.md: every ``HEARTH_*`` variable, the engine's then the app's."""
    return (
        "# Configuration: the HEARTH_* environment variables\n\n"
        "Every knob Hearth reads from the environment, generated from their declarations\n"
        "(`engine/settings.py`, `app/system/environment.py`) by `make configuration-doc`;\n"
        "`tests/test_settings_homes.py` fails when this page and the declarations differ, or\n"
        "when code reads a `HEARTH_*` variable anywhere else. Kinds: *switch* (`0` turns a\n"
        "feature off; `1`, where said, forces it on), *count* (a whole number), *path*, *text*.\n\n"
        "## Engine (`engine/settings.py`)\n\n"
        f"{markdown_table(engine_settings.SETTINGS)}\n"
        "## App (`app/system/environment.py`)\n\n"
        f"{markdown_table(SETTINGS)}"
    )


if __name__ == "__main__":
    sys.stdout.write(configuration_markdown())
