"""`python -m app --screenshot PATH --models`: the Models window's catalogue, saved as PNG.

Renders the catalogue with its verdicts offscreen for the README, with a throwaway settings
file. Verdicts are judged for ``ram_gb`` of available RAM (default 8: a 16 GB laptop with a
browser open) and speeds for a laptop whose decode reads ``read_gb_s`` of weights a second
(default 10: half a dual-channel DDR4/DDR5 laptop's bandwidth), in a throwaway cache folder, so
the picture does not depend on the machine that draws it; where the Hub cannot be reached the
verdicts are the catalogue's estimates, and the window says so.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from app.system import environment

SHOT_SIZE = (1280, 1500)  # the whole catalogue and its Safety section, no scrolling


def save_models_screenshot(
    path: Path, *, theme: str = "light", ram_gb: float = 8.0, read_gb_s: float = 10.0
) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from app.system.secrets import KeyStore
    from app.system.settings import Settings
    from app.views.models.dialog import ModelsDialog
    from app.views.theme import apply_theme, resolve_dark

    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication), "create the QApplication first"
    apply_theme(qapp, resolve_dark(theme))
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory(prefix="hearth-models-shot-") as tmp:
        from engine.hub.fit import record_probe

        # this process draws, then ends
        os.environ[environment.CACHE_DIR.name] = str(Path(tmp) / "cache")
        record_probe(read_gb_s * 1e9)
        dialog = ModelsDialog(Settings(str(Path(tmp) / "settings.ini")), KeyStore())
        dialog.resize(*SHOT_SIZE)

        async def shoot() -> bool:
            await dialog.catalogue.load(dialog.access(), int(ram_gb * 2**30))
            dialog.show()
            for _ in range(3):  # let rich-text rows settle their heights before the grab
                dialog.grab()
                await asyncio.sleep(0.05)
            path.parent.mkdir(parents=True, exist_ok=True)
            return dialog.grab().save(str(path), "PNG")

        with loop:
            ok = loop.run_until_complete(shoot())
    return 0 if ok else 1
